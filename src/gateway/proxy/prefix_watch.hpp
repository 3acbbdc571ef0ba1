// Prefix breaks: a conversation (one session key) whose prompt start changes from one turn to the next,
// so the engine's prefix cache cannot reuse even its first blocks. The digest of each session's last
// prompt start (protocol::prompt_start()) is kept; a request of the same session with a digest of the
// same length but a different value is a break. Digests of different lengths are not compared (a prompt
// shorter than the budget grows every turn): the new one is kept.
// Bounded: beyond `max_sessions` the table is emptied (a break may then go unseen, none is invented).
// Not thread-safe: owned by the gateway's I/O thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include <boost/unordered/unordered_flat_map.hpp>

#include "protocol/request.hpp"

namespace warden::gateway {

class PrefixWatch {
 public:
  explicit PrefixWatch(std::size_t max_sessions = 65536) : max_sessions_(max_sessions) {}

  /// Records the prompt start of a request of session `session_hash`; true if it is a break.
  bool observe(std::uint64_t session_hash, const protocol::PromptStart& start);
  /// Breaks seen since the warden started.
  std::uint64_t breaks() const noexcept { return breaks_; }

 private:
  std::size_t max_sessions_;
  boost::unordered_flat_map<std::uint64_t, protocol::PromptStart> last_;
  std::uint64_t breaks_ = 0;
};

}  // namespace warden::gateway
