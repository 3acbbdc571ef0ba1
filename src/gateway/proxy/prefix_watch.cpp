#include "gateway/proxy/prefix_watch.hpp"

namespace warden::gateway {

bool PrefixWatch::observe(std::uint64_t session_hash, const protocol::PromptStart& start) {
  if (start.bytes == 0) {
    return false;  // no prompt text to compare
  }
  auto it = last_.find(session_hash);
  if (it == last_.end()) {
    if (last_.size() >= max_sessions_) {
      last_.clear();
    }
    last_.emplace(session_hash, start);
    return false;
  }
  const bool broke = it->second.bytes == start.bytes && it->second.hash != start.hash;
  it->second = start;
  breaks_ += broke ? 1 : 0;
  return broke;
}

}  // namespace warden::gateway
