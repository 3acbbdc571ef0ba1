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

/// The synchronous half of an eager write: writes what the socket takes now. Returns true when that
/// settled it (all written, or `ec` holds a real error); false when `done` bytes went out and the rest
/// needs write_rest(). A plain function, so that a write that fits costs no coroutine frame.
template <class ConstBufferSequence>
bool write_now(beast::tcp_stream& stream, const ConstBufferSequence& buffers, std::size_t& done,
               boost::system::error_code& ec) {
  detail::make_non_blocking(stream);
  done = stream.socket().write_some(buffers, ec);
  if (ec) {
    if (!detail::would_block(ec)) {
      return true;
    }
    ec = {};
    done = 0;
    return false;
  }
  return done == asio::buffer_size(buffers);
}

/// The asynchronous half: writes `buffers` from byte `done` on, with `timeout`.
template <class ConstBufferSequence>
asio::awaitable<boost::system::error_code> write_rest(beast::tcp_stream& stream,
                                                      const ConstBufferSequence& buffers, std::size_t done,
                                                      std::chrono::milliseconds timeout) {
  beast::buffers_suffix<ConstBufferSequence> rest(buffers);
  rest.consume(done);
  stream.expires_after(timeout);
  auto [wec, wn] = co_await asio::async_write(stream, rest, asio::as_tuple(asio::use_awaitable));
  co_return wec;
}

/// Writes all of `buffers` (a ConstBufferSequence): eagerly, then asynchronously with `timeout`.
template <class ConstBufferSequence>
asio::awaitable<boost::system::error_code> eager_write(beast::tcp_stream& stream,
                                                       const ConstBufferSequence& buffers,
                                                       std::chrono::milliseconds timeout) {
  std::size_t done = 0;
  boost::system::error_code ec;
  if (write_now(stream, buffers, done, ec)) {
    co_return ec;
  }
  co_return co_await write_rest(stream, buffers, done, timeout);
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
