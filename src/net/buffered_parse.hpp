#pragma once
// Feeding a Beast parser from a read buffer by hand: the server and the upstream client read with plain
// socket reads (see ReadDeadline) and parse what arrived with this, in one place, and tell the peer's
// protocol violations from the other ways a read ends.

#include "net/http.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>

namespace warden::net {

/// Puts what `buffer` holds into `parser` (consumed bytes leave the buffer) until the message is done,
/// the buffer is empty, or the parser wants more than is there: a partial line (need_more) or, for a
/// buffer_body, room in its body buffer (need_buffer). Those two are not errors; anything else is.
template <class Parser>
boost::system::error_code put_buffered(Parser& parser, beast::flat_buffer& buffer) {
  boost::system::error_code ec;
  while (!parser.is_done() && buffer.size() > 0) {
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more || ec == http::error::need_buffer) {
      return {};
    }
    if (ec || used == 0) {
      return ec;
    }
  }
  return ec;
}

/// True for a protocol violation by the peer (a malformed message: worth a 400 from a server, a bad
/// response to a client), false for EOF, a cut-off message, a timeout or a transport error.
inline bool is_parse_error(const boost::system::error_code& ec) {
  return ec.category() == make_error_code(http::error::bad_target).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message &&
         ec != http::error::need_more && ec != http::error::need_buffer;
}

}  // namespace warden::net
