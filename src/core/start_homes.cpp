#include "core/start_homes.hpp"

#include <algorithm>
#include <vector>

namespace warden::core {

StartHomes::StartHomes(std::size_t max_entries) : max_entries_(std::max<std::size_t>(1, max_entries)) {}

void StartHomes::served(std::uint64_t start, ReplicaIndex replica, Time now, std::uint64_t thread,
                        bool keep) {
  if (start == 0 || replica >= replica_set_size) {
    return;
  }
  if (!last_.contains(start) && last_.size() >= max_entries_) {
    shed();
  }
  Served& s = last_[start];
  s.replicas |= ReplicaSet{1} << replica;
  s.at = std::max(s.at, now);
  if (thread == 0) {
    return;
  }
  for (std::size_t i = 0; i < threads_kept; ++i) {
    if (s.threads[i] != 0 && s.on[i] == replica) {
      s.threads[i] = keep ? s.threads[i] : thread;  // the replica's latest, unless its witness holds
      return;
    }
  }
  s.threads[s.next] = thread;
  s.on[s.next] = replica;
  s.next = static_cast<std::uint8_t>((s.next + 1) % threads_kept);
}

std::uint64_t StartHomes::witness(std::uint64_t start, ReplicaIndex replica) const {
  const auto it = last_.find(start);
  if (it == last_.end()) {
    return 0;
  }
  for (std::size_t i = 0; i < threads_kept; ++i) {
    if (it->second.threads[i] != 0 && it->second.on[i] == replica) {
      return it->second.threads[i];
    }
  }
  return 0;
}

void StartHomes::set_length(std::uint64_t start, std::uint64_t tokens) {
  if (const auto it = last_.find(start); it != last_.end()) {
    it->second.tokens = tokens;
  }
}

std::uint64_t StartHomes::length(std::uint64_t start) const {
  const auto it = last_.find(start);
  return it == last_.end() ? 0 : it->second.tokens;
}

StartHomes::Threads StartHomes::threads(std::uint64_t start) const {
  const auto it = last_.find(start);
  return it == last_.end() ? Threads{} : it->second.threads;
}

ReplicaSet StartHomes::find(std::uint64_t start) const {
  const auto it = last_.find(start);
  return it == last_.end() ? 0 : it->second.replicas;
}

// Forgets the least recently served half: O(n) once every n/2 new starts.
void StartHomes::shed() {
  std::vector<Time> times;
  times.reserve(last_.size());
  for (const auto& [start, s] : last_) {
    times.push_back(s.at);
  }
  const auto middle = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
  std::nth_element(times.begin(), middle, times.end());
  const Time cutoff = *middle;
  boost::unordered::erase_if(last_, [&](const auto& kv) { return kv.second.at <= cutoff; });
}

}  // namespace warden::core
