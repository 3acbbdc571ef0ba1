#include "engine/offload_tier.hpp"

namespace warden::engine {

OffloadTier::OffloadTier(std::size_t capacity_blocks) : capacity_(capacity_blocks) {}

void OffloadTier::to_front(std::list<BlockHash>::iterator it) {
  order_.splice(order_.begin(), order_, it);
}

OffloadStore OffloadTier::store(BlockHash hash) {
  OffloadStore out;
  if (capacity_ == 0) {
    return out;
  }
  if (const auto it = where_.find(hash); it != where_.end()) {
    to_front(it->second);
    return out;
  }
  if (order_.size() == capacity_) {
    out.evicted = order_.back();
    where_.erase(order_.back());
    order_.pop_back();
  }
  order_.push_front(hash);
  where_.emplace(hash, order_.begin());
  out.added = true;
  return out;
}

std::size_t OffloadTier::lookup(std::span<const BlockHash> hashes) {
  std::size_t n = 0;
  for (const BlockHash h : hashes) {
    const auto it = where_.find(h);
    if (it == where_.end()) {
      break;
    }
    to_front(it->second);
    ++n;
  }
  return n;
}

}  // namespace warden::engine
