// The KV cache events of one engine step, written where vLLM's KV cache manager writes them (engine.hpp
// calls it; nothing is recorded unless EngineConfig::kv_events is on).
//
// GPU (vllm/v1/core/block_pool.py):
// - BlockPool.cache_full_blocks: one BlockStored per request, KV cache group and allocation, for the blocks
//   that became full since the last one (a prefix hit is never announced again; a duplicate of a cached
//   hash is, since vLLM keeps duplicates). parent = the block before the first (kRootBlockHash: none).
// - BlockPool._maybe_evict_cached_block: one BlockRemoved per cached block an allocation evicts.
// Hybrid models: group 0 is the attention group; groups 1..n are the linear-attention (mamba) groups.
// Under the mamba cache mode vLLM uses with prefix caching ("align", MambaManager in
// single_type_kv_cache_manager.py) a mamba group holds null blocks but for the one that keeps the state at
// the end of the step, and cache_full_blocks skips null blocks: its BlockStored spans the same tokens as
// the attention group's but names only that block, when the step's tokens end on its boundary (the state
// checkpoint), else none. The model ties a checkpoint's life to its attention block: the attention
// block's eviction removes it from the mamba groups too.
//
// CPU (the offloading connector's take_events, thin by default): one BlockStored per block new to the
// host store (no tokens, no parent, block size 0, no session), one BlockRemoved per block its LRU evicts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/block_cache.hpp"
#include "engine/kv_events.hpp"
#include "engine/tokenizer.hpp"

namespace warden::engine {

// Blocks [first, last) of a request newly registered in the GPU cache, once `upto` of its tokens are
// computed (upto >= last * block_size).
struct StoredBlocks {
  std::span<const TokenId> tokens;    // the request's tokens
  std::span<const BlockHash> hashes;  // its block hashes, at least `last` of them
  std::size_t first = 0;
  std::size_t last = 0;
  std::uint64_t upto = 0;
  const std::string* session_id = nullptr;
};

class KvEventLog {
 public:
  // mamba_groups: the linear-attention groups beside the attention group (0 for a dense model).
  KvEventLog(bool on, std::uint32_t block_size, std::uint32_t mamba_groups);

  bool on() const { return on_; }

  void stored(const StoredBlocks& blocks);
  void removed(BlockHash hash);
  void cpu_stored(BlockHash hash);
  void cpu_removed(BlockHash hash);

  // The events recorded since the last take, in order.
  std::vector<KvEvent> take();

 private:
  KvEvent gpu_stored(const StoredBlocks& blocks, std::vector<BlockHash> hashes) const;
  KvEvent gpu_removed(BlockHash hash, std::uint32_t group) const;
  void cpu(KvEvent::Kind kind, BlockHash hash);  // a thin event

  bool on_;
  std::uint32_t block_size_;
  std::uint32_t mamba_groups_;
  std::unordered_set<BlockHash> checkpoints_;  // hashes the mamba groups announced and not yet removed
  std::vector<KvEvent> events_;
};

}  // namespace warden::engine
