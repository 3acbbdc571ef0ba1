#include "core/shared_ids.hpp"

#include <algorithm>

#include "base/splitmix.hpp"

namespace warden::core {

namespace {

// A key of the id and the first message, never the id's own.
std::uint64_t combined(std::uint64_t session, std::uint64_t first) {
  const std::uint64_t key = base::splitmix64(session ^ base::splitmix64(first));
  return key == session ? key + 1 : key;
}

}  // namespace

std::uint64_t SharedIds::key(std::uint64_t session, std::uint64_t first) {
  if (first == 0) {
    return session;
  }
  if (ids_.size() >= max_ids && !ids_.contains(session)) {
    boost::unordered::erase_if(ids_, [](const auto& id) { return !id.second.shared; });
  }
  Seen& seen = ids_[session];
  const auto digest = static_cast<std::uint32_t>(first | 1);  // never the 0 of an empty place
  if (seen.recent[seen.last] != digest) {
    // A first message seen before, after another one: two conversations take turns under the id (a
    // compaction replaces a conversation's first message for good).
    if (!seen.shared && std::find(seen.recent.begin(), seen.recent.end(), digest) != seen.recent.end()) {
      seen.shared = true;
      ++shared_;
    }
    seen.last = static_cast<std::uint8_t>((seen.last + 1) % seen.recent.size());
    seen.recent[seen.last] = digest;
  }
  return seen.shared ? combined(session, first) : session;
}

std::uint64_t SharedIds::key_of(std::uint64_t session, std::uint64_t first) const {
  const auto it = first == 0 ? ids_.end() : ids_.find(session);
  return it != ids_.end() && it->second.shared ? combined(session, first) : session;
}

}  // namespace warden::core
