#include "core/start_homes.hpp"

#include <algorithm>

namespace warden::core {

StartHomes::StartHomes(std::size_t max_entries) : max_entries_(std::max<std::size_t>(1, max_entries)) {}

const StartHomes::Served* StartHomes::find_served(std::uint64_t start) const {
  const auto it = slots_.find(start);
  return it == slots_.end() ? nullptr : &nodes_[it->second];
}

StartHomes::Served& StartHomes::touch(std::uint64_t start) {
  if (const auto it = slots_.find(start); it != slots_.end()) {
    recency_.unlink(nodes_, it->second);
    recency_.push_front(nodes_, it->second);
    return nodes_[it->second];
  }
  if (slots_.size() >= max_entries_) {
    const std::uint32_t oldest = recency_.tail;
    recency_.unlink(nodes_, oldest);
    slots_.erase(nodes_[oldest].start);
    nodes_.release(oldest);
  }
  const std::uint32_t slot = nodes_.take();
  nodes_[slot].start = start;
  slots_.emplace(start, slot);
  recency_.push_front(nodes_, slot);
  return nodes_[slot];
}

void StartHomes::served(std::uint64_t start, ReplicaIndex replica, std::uint64_t thread, bool keep) {
  if (start == 0 || replica >= replica_set_size) {
    return;
  }
  Served& s = touch(start);
  s.replicas |= ReplicaSet{1} << replica;
  if (thread == 0) {
    return;
  }
  for (std::size_t i = 0; i < threads_kept; ++i) {
    if (s.threads[i] != 0 && s.on[i] == replica) {
      s.threads[i] = keep ? s.threads[i] : thread;  // the replica's latest, unless its witness holds
      return;
    }
  }
  s.threads[s.ring] = thread;
  s.on[s.ring] = replica;
  s.ring = static_cast<std::uint8_t>((s.ring + 1) % threads_kept);
}

std::uint64_t StartHomes::witness(std::uint64_t start, ReplicaIndex replica) const {
  const Served* s = find_served(start);
  if (s == nullptr) {
    return 0;
  }
  for (std::size_t i = 0; i < threads_kept; ++i) {
    if (s->threads[i] != 0 && s->on[i] == replica) {
      return s->threads[i];
    }
  }
  return 0;
}

void StartHomes::set_length(std::uint64_t start, std::uint64_t tokens) {
  if (const auto it = slots_.find(start); it != slots_.end()) {
    nodes_[it->second].tokens = tokens;
  }
}

std::uint64_t StartHomes::length(std::uint64_t start) const {
  const Served* s = find_served(start);
  return s == nullptr ? 0 : s->tokens;
}

StartHomes::Threads StartHomes::threads(std::uint64_t start) const {
  const Served* s = find_served(start);
  return s == nullptr ? Threads{} : s->threads;
}

ReplicaSet StartHomes::find(std::uint64_t start) const {
  const Served* s = find_served(start);
  return s == nullptr ? 0 : s->replicas;
}

}  // namespace warden::core
