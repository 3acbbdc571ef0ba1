#pragma once
// Common names of the net layer: the message types every handler, client and proxy uses.
//
// GCC 12 coroutine pitfall (seen here, double free): a temporary with a destructor built inside a
// co_await expression — `co_await f(Endpoint{"h", 1})`, `co_return T{co_await g()}` — may be destroyed
// twice. Bind such arguments and results to named locals first.

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "protocol/error.hpp"

namespace warden::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

/// The net layer's Result is the protocol layer's (one name for one type): a value, or an error_code, here
/// Asio's (a refused connect, a timeout, a reset), read by the proxy (docs/architecture.md, "Errors").
using protocol::Result;

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
/// A request already serialized by the caller: `head` is the whole header block ("POST /x HTTP/1.1\r\n",
/// the fields including Host and Content-Length, the empty line); `body` is the body in pieces, borrowed:
/// they must stay alive until the send completes. A proxy builds this straight from the client's request:
/// no header object, no copy of a 200 KB prompt (a rewrite is the prompt's slices around the new texts).
struct RawRequest {
  std::string head;
  std::vector<std::string_view> body;
  bool head_method = false;  // a HEAD request: the response has no body whatever its headers say
};

}  // namespace warden::net
