#pragma once
// Eager writes: what the socket takes at once is written synchronously (non-blocking), only the rest
// goes through an asynchronous write. In this Asio version the completion of an asynchronous operation
// is always posted, even when it finished at once: a trip through the scheduler (a reactor poll and a
// coroutine resume) per write. A relay's writes nearly always fit the socket's send buffer, so this
// takes one system call per write and nothing else.

#include "net/http.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/write.hpp>

#include <chrono>

namespace warden::net {

namespace detail {
inline bool would_block(const boost::system::error_code& ec) {
  return ec == asio::error::would_block || ec == asio::error::try_again;
}
// Synchronous operations on a socket whose user-visible mode is blocking would wait (poll) instead of
// returning would_block; asynchronous operations do not care about this mode.
inline void make_non_blocking(beast::tcp_stream& stream) {
  if (!stream.socket().non_blocking()) {
    boost::system::error_code ignored;
    stream.socket().non_blocking(true, ignored);
  }
}
}  // namespace detail

/// Writes all of `buffers` (a ConstBufferSequence): eagerly, then asynchronously with `timeout`.
template <class ConstBufferSequence>
asio::awaitable<boost::system::error_code> eager_write(beast::tcp_stream& stream,
                                                       const ConstBufferSequence& buffers,
                                                       std::chrono::milliseconds timeout) {
  detail::make_non_blocking(stream);
  boost::system::error_code ec;
  const std::size_t total = asio::buffer_size(buffers);
  const std::size_t done = stream.socket().write_some(buffers, ec);
  if (!ec && done == total) {
    co_return ec;
  }
  if (ec && !detail::would_block(ec)) {
    co_return ec;
  }
  beast::buffers_suffix<ConstBufferSequence> rest(buffers);
  rest.consume(done);
  stream.expires_after(timeout);
  auto [wec, wn] = co_await asio::async_write(stream, rest, asio::as_tuple(asio::use_awaitable));
  co_return wec;
}

/// Writes a whole HTTP message through `serializer`: eagerly, then asynchronously with `timeout`.
template <class Serializer>
asio::awaitable<boost::system::error_code> eager_write_message(beast::tcp_stream& stream,
                                                               Serializer& serializer,
                                                               std::chrono::milliseconds timeout) {
  detail::make_non_blocking(stream);
  boost::system::error_code ec;
  http::write(stream.socket(), serializer, ec);
  if (!ec || !detail::would_block(ec)) {
    co_return ec;
  }
  stream.expires_after(timeout);
  auto [wec, wn] = co_await http::async_write(stream, serializer, asio::as_tuple(asio::use_awaitable));
  co_return wec;
}

}  // namespace warden::net
