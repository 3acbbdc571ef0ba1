#pragma once
// Feeding a Beast parser from a read buffer by hand: the server and the upstream client read with plain
// socket reads (see ReadDeadline) and parse what arrived with this, in one place.

#include "net/http.hpp"

#include <boost/beast/core/flat_buffer.hpp>

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

}  // namespace warden::net
