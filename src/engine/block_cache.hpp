// vLLM's prefix cache (V1 BlockPool + KVCacheManager), reduced to bookkeeping.
//
// The KV cache is num_blocks blocks of block_size tokens. A *full* block gets a hash chaining its
// parent's hash with its token ids (xxHash64), so a block hash identifies the whole prefix up to it.
// Lookup walks a prompt's hashes from the start and stops at the first miss: only a prefix can hit.
// Blocks are reference-counted; a block whose count drops to 0 goes to the tail of a free queue but keeps
// its hash (it can still be hit, which takes it back out of the queue). Allocation takes the head of the
// queue (least recently freed) and evicts its hash. A request frees its blocks in reverse order, so a
// prompt's tail is evicted before its head, as in vLLM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer.hpp"

namespace warden::engine {

using BlockHash = std::uint64_t;
using BlockId = std::uint32_t;

// Hash of the empty prefix (the parent of block 0).
inline constexpr BlockHash kRootBlockHash = 0x6c6d2d7761726465ULL;

// Hash of one full block: xxHash64 over the parent hash followed by the block's token ids.
BlockHash hash_block(BlockHash parent, std::span<const TokenId> block_tokens);

// Appends the chained hashes of every full block of tokens[0 .. n) not yet in `hashes` (hashes holds the
// first hashes.size() blocks already): incremental, so a growing sequence is hashed once per block.
void extend_block_hashes(std::span<const TokenId> tokens, std::uint32_t block_size,
                         std::vector<BlockHash>& hashes);

class BlockCache {
 public:
  BlockCache(std::uint32_t num_blocks, std::uint32_t block_size);

  std::uint32_t num_blocks() const { return num_blocks_; }
  std::uint32_t block_size() const { return block_size_; }
  std::uint32_t num_free() const { return num_free_; }
  // Fraction of blocks held by requests (ref count > 0), 0..1; cached-but-free blocks count as free,
  // as vLLM's kv_cache_usage_perc does.
  double usage() const;

  // Number of leading hashes found in the cache (stops at the first miss). No state change.
  std::size_t count_cached_prefix(std::span<const BlockHash> hashes) const;

  // How many of the first n hashes (all cached) sit in the free queue (ref count 0).
  std::size_t count_free_in_prefix(std::span<const BlockHash> hashes, std::size_t n) const;

  // Takes the blocks of the first n hashes, which must all be cached (n <= count_cached_prefix):
  // increments their ref counts and removes free ones from the free queue.
  std::vector<BlockId> acquire_cached(std::span<const BlockHash> hashes, std::size_t n);

  // A fresh block from the head of the free queue (its old hash evicted), ref count 1;
  // nullopt when no block is free.
  std::optional<BlockId> allocate();

  // The hash the next allocate() evicts from the cache: the queue head's, if that block holds it;
  // nullopt when it holds none (or no block is free).
  std::optional<BlockHash> next_evicted() const;

  // Records that `block` (held, now full) has `hash`. If another block already carries that hash the
  // cache keeps the existing one (lookups find the first).
  void cache_block(BlockId block, BlockHash hash);

  // Decrements ref counts of `blocks` in reverse order; blocks reaching 0 go to the free queue tail.
  void release(std::span<const BlockId> blocks);

  // Inspection for tests and metrics.
  std::uint32_t ref_count(BlockId block) const { return ref_count_[block]; }
  std::optional<BlockHash> block_hash(BlockId block) const;
  bool is_cached(BlockHash hash) const { return by_hash_.contains(hash); }
  // Free queue from head (next to be evicted) to tail.
  std::vector<BlockId> free_queue() const;

 private:
  static constexpr BlockId kNone = 0xffffffffU;
  void unlink(BlockId b);
  void push_back(BlockId b);

  std::uint32_t num_blocks_;
  std::uint32_t block_size_;
  std::uint32_t num_free_ = 0;
  std::vector<std::uint32_t> ref_count_;
  std::vector<BlockHash> hash_;
  std::vector<std::uint8_t> has_hash_;
  std::vector<BlockId> prev_;
  std::vector<BlockId> next_;
  BlockId head_ = kNone;
  BlockId tail_ = kNone;
  std::unordered_map<BlockHash, BlockId> by_hash_;
};

}  // namespace warden::engine
