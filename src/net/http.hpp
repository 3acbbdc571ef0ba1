#pragma once
// Common names of the net layer: the message types every handler, client and proxy uses.
//
// GCC 12 coroutine pitfall (seen here, double free): a temporary with a destructor built inside a
// co_await expression — `co_await f(Endpoint{"h", 1})`, `co_return T{co_await g()}` — may be destroyed
// twice. Bind such arguments and results to named locals first.

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/http/string_body.hpp>

namespace warden::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
/// A request whose body points into a string owned elsewhere.
using BorrowedRequest = http::request<http::span_body<const char>>;

}  // namespace warden::net
