// vLLM's native CPU KV offload (`--kv-offloading-backend native --kv-offloading-size GiB`), reduced to
// bookkeeping: a per-rank host-memory store of block hashes with LRU eviction.
//
// vLLM's OffloadingConnector copies every full block a request computes to host memory as it goes (the
// copies run on their own stream, overlapping the steps), so the host store holds the most recently
// computed or looked-up blocks whatever the GPU cache has since evicted. A waiting request whose prefix
// continues in the store past its GPU hits loads those blocks back over PCIe instead of recomputing them
// (the engine charges the transfer to the step that admits it: engine.hpp).
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>

#include "engine/block_cache.hpp"

namespace warden::engine {

// What a store did: whether the hash is new to the store, and which hash it evicted to make room.
struct OffloadStore {
  bool added = false;
  std::optional<BlockHash> evicted;
};

class OffloadTier {
 public:
  // capacity 0: offload off (nothing is stored, nothing found).
  explicit OffloadTier(std::size_t capacity_blocks);

  std::size_t capacity() const { return capacity_; }
  std::size_t size() const { return order_.size(); }
  bool contains(BlockHash hash) const { return where_.contains(hash); }

  // Stores a computed block (or refreshes it): it becomes the most recently used; the least recently used
  // one is evicted when the store is full.
  OffloadStore store(BlockHash hash);

  // Leading hashes of `hashes` found in the store, stopping at the first miss; each found one becomes the
  // most recently used (vLLM's manager.touch on lookup).
  std::size_t lookup(std::span<const BlockHash> hashes);

 private:
  void to_front(std::list<BlockHash>::iterator it);

  std::size_t capacity_;
  std::list<BlockHash> order_;  // front: most recently used
  std::unordered_map<BlockHash, std::list<BlockHash>::iterator> where_;
};

}  // namespace warden::engine
