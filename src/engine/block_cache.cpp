#include "engine/block_cache.hpp"

#include <xxhash.h>

#include <array>
#include <cassert>
#include <cstring>

namespace warden::engine {

BlockHash hash_block(BlockHash parent, std::span<const TokenId> block_tokens) {
  // Little-endian bytes of the parent hash then each id, so the hash is the same on every host.
  constexpr std::size_t kInline = 8 + 4 * 1024;
  std::array<unsigned char, kInline> small{};
  std::vector<unsigned char> large;
  unsigned char* buf = small.data();
  const std::size_t len = 8 + 4 * block_tokens.size();
  if (len > kInline) {
    large.resize(len);
    buf = large.data();
  }
  for (std::size_t i = 0; i < 8; ++i) {
    buf[i] = static_cast<unsigned char>((parent >> (8 * i)) & 0xffU);
  }
  std::size_t n = 8;
  for (TokenId t : block_tokens) {
    for (std::size_t i = 0; i < 4; ++i) {
      buf[n++] = static_cast<unsigned char>((t >> (8 * i)) & 0xffU);
    }
  }
  return XXH64(buf, len, 0);
}

void extend_block_hashes(std::span<const TokenId> tokens, std::uint32_t block_size,
                         std::vector<BlockHash>& hashes) {
  const std::size_t full = tokens.size() / block_size;
  while (hashes.size() < full) {
    const std::size_t b = hashes.size();
    const BlockHash parent = b == 0 ? kRootBlockHash : hashes[b - 1];
    hashes.push_back(hash_block(parent, tokens.subspan(b * block_size, block_size)));
  }
}

BlockCache::BlockCache(std::uint32_t num_blocks, std::uint32_t block_size)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      ref_count_(num_blocks, 0),
      hash_(num_blocks, 0),
      has_hash_(num_blocks, 0),
      prev_(num_blocks, kNone),
      next_(num_blocks, kNone) {
  by_hash_.reserve(num_blocks);
  for (BlockId b = 0; b < num_blocks; ++b) {
    push_back(b);
  }
}

double BlockCache::usage() const {
  return num_blocks_ == 0 ? 0.0 : 1.0 - static_cast<double>(num_free_) / static_cast<double>(num_blocks_);
}

std::size_t BlockCache::count_cached_prefix(std::span<const BlockHash> hashes) const {
  std::size_t n = 0;
  while (n < hashes.size() && by_hash_.contains(hashes[n])) {
    ++n;
  }
  return n;
}

std::size_t BlockCache::count_free_in_prefix(std::span<const BlockHash> hashes, std::size_t n) const {
  std::size_t free = 0;
  for (std::size_t i = 0; i < n; ++i) {
    free += ref_count_[by_hash_.at(hashes[i])] == 0 ? 1 : 0;
  }
  return free;
}

std::vector<BlockId> BlockCache::acquire_cached(std::span<const BlockHash> hashes, std::size_t n) {
  std::vector<BlockId> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto it = by_hash_.find(hashes[i]);
    assert(it != by_hash_.end());
    const BlockId b = it->second;
    if (ref_count_[b] == 0) {
      unlink(b);
    }
    ++ref_count_[b];
    out.push_back(b);
  }
  return out;
}

std::optional<BlockId> BlockCache::allocate() {
  if (head_ == kNone) {
    return std::nullopt;
  }
  const BlockId b = head_;
  unlink(b);
  if (has_hash_[b] != 0) {
    // Only evict the map entry if it still points at this block (a duplicate hash may live elsewhere).
    const auto it = by_hash_.find(hash_[b]);
    if (it != by_hash_.end() && it->second == b) {
      by_hash_.erase(it);
    }
    has_hash_[b] = 0;
  }
  ref_count_[b] = 1;
  return b;
}

std::optional<BlockHash> BlockCache::next_evicted() const {
  if (head_ == kNone || has_hash_[head_] == 0) {
    return std::nullopt;
  }
  const auto it = by_hash_.find(hash_[head_]);
  if (it == by_hash_.end() || it->second != head_) {
    return std::nullopt;
  }
  return hash_[head_];
}

void BlockCache::cache_block(BlockId block, BlockHash hash) {
  if (has_hash_[block] != 0) {
    return;
  }
  if (by_hash_.try_emplace(hash, block).second) {
    hash_[block] = hash;
    has_hash_[block] = 1;
  }
}

void BlockCache::release(std::span<const BlockId> blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    const BlockId b = *it;
    assert(ref_count_[b] > 0);
    if (--ref_count_[b] == 0) {
      push_back(b);
    }
  }
}

std::optional<BlockHash> BlockCache::block_hash(BlockId block) const {
  if (has_hash_[block] == 0) {
    return std::nullopt;
  }
  return hash_[block];
}

std::vector<BlockId> BlockCache::free_queue() const {
  std::vector<BlockId> out;
  out.reserve(num_free_);
  for (BlockId b = head_; b != kNone; b = next_[b]) {
    out.push_back(b);
  }
  return out;
}

void BlockCache::unlink(BlockId b) {
  const BlockId p = prev_[b];
  const BlockId n = next_[b];
  if (p != kNone) {
    next_[p] = n;
  } else {
    head_ = n;
  }
  if (n != kNone) {
    prev_[n] = p;
  } else {
    tail_ = p;
  }
  prev_[b] = kNone;
  next_[b] = kNone;
  --num_free_;
}

void BlockCache::push_back(BlockId b) {
  prev_[b] = tail_;
  next_[b] = kNone;
  if (tail_ != kNone) {
    next_[tail_] = b;
  } else {
    head_ = b;
  }
  tail_ = b;
  ++num_free_;
}

}  // namespace warden::engine
