#include "engine/block_cache.hpp"

#include <gtest/gtest.h>

#include "engine/seq.hpp"

namespace warden::engine {
namespace {

using test::seq;

std::vector<BlockHash> hashes_of(const Tokens& t, std::uint32_t bs) {
  std::vector<BlockHash> h;
  extend_block_hashes(t, bs, h);
  return h;
}

// Holds blocks for `hashes` (all fresh), caches them, and returns the block ids.
std::vector<BlockId> fill(BlockCache& cache, const std::vector<BlockHash>& hashes) {
  std::vector<BlockId> blocks;
  for (BlockHash h : hashes) {
    const auto b = cache.allocate();
    EXPECT_TRUE(b.has_value());
    cache.cache_block(*b, h);
    blocks.push_back(*b);
  }
  return blocks;
}

TEST(BlockHashes, OnlyFullBlocksAndChainedOnParent) {
  const Tokens a = seq(100, 10);
  EXPECT_EQ(hashes_of(a, 4).size(), 2U);  // 10 tokens: 2 full blocks of 4
  Tokens b = a;
  b[0] = 999;  // differs in block 0 only
  const auto ha = hashes_of(a, 4);
  const auto hb = hashes_of(b, 4);
  EXPECT_NE(ha[0], hb[0]);
  EXPECT_NE(ha[1], hb[1]);  // same tokens in block 1, different parent
  // Incremental extension gives the same chain.
  std::vector<BlockHash> inc;
  extend_block_hashes(std::span(a).first(5), 4, inc);
  extend_block_hashes(a, 4, inc);
  EXPECT_EQ(inc, ha);
}

TEST(BlockCache, OnlyAPrefixCanHit) {
  BlockCache cache(8, 4);
  const Tokens a = seq(100, 12);
  const auto blocks = fill(cache, hashes_of(a, 4));
  cache.release(blocks);

  EXPECT_EQ(cache.count_cached_prefix(hashes_of(a, 4)), 3U);
  Tokens first_differs = a;
  first_differs[1] = 7;  // block 0 differs: later blocks have equal tokens but no hit
  EXPECT_EQ(cache.count_cached_prefix(hashes_of(first_differs, 4)), 0U);
  Tokens last_differs = a;
  last_differs[9] = 7;
  EXPECT_EQ(cache.count_cached_prefix(hashes_of(last_differs, 4)), 2U);
}

TEST(BlockCache, FreeQueueIsLruAndRequestsFreeTheirTailFirst) {
  BlockCache cache(4, 4);
  EXPECT_EQ(cache.free_queue(), (std::vector<BlockId>{0, 1, 2, 3}));
  const auto h1 = hashes_of(seq(1, 8), 4);  // two blocks
  const auto h2 = hashes_of(seq(50, 4), 4);
  const auto s1 = fill(cache, h1);  // blocks 0, 1
  const auto s2 = fill(cache, h2);  // block 2
  EXPECT_EQ(cache.num_free(), 1U);
  cache.release(s1);  // reverse order: 1 then 0
  cache.release(s2);
  EXPECT_EQ(cache.free_queue(), (std::vector<BlockId>{3, 1, 0, 2}));

  // Hashes stay until the block is reused; allocation evicts the head's hash only.
  EXPECT_EQ(cache.allocate(), 3U);
  EXPECT_TRUE(cache.is_cached(h1[1]));
  EXPECT_EQ(cache.allocate(), 1U);
  EXPECT_FALSE(cache.is_cached(h1[1]));
  EXPECT_FALSE(cache.block_hash(1).has_value());
  EXPECT_TRUE(cache.is_cached(h1[0]));
  EXPECT_TRUE(cache.is_cached(h2[0]));
  EXPECT_EQ(cache.count_cached_prefix(h1), 1U);
}

TEST(BlockCache, RefCountsWithTwoHoldersOfASharedPrefix) {
  BlockCache cache(6, 4);
  const auto h = hashes_of(seq(10, 8), 4);
  const auto owner = fill(cache, h);
  const auto sharer = cache.acquire_cached(h, 2);
  EXPECT_EQ(sharer, owner);
  EXPECT_EQ(cache.ref_count(owner[0]), 2U);
  EXPECT_EQ(cache.num_free(), 4U);
  EXPECT_DOUBLE_EQ(cache.usage(), 2.0 / 6.0);

  cache.release(owner);
  EXPECT_EQ(cache.ref_count(owner[0]), 1U);
  EXPECT_EQ(cache.num_free(), 4U);  // still held by the sharer
  cache.release(sharer);
  EXPECT_EQ(cache.num_free(), 6U);
  EXPECT_DOUBLE_EQ(cache.usage(), 0.0);

  // A hit on a free cached block takes it out of the free queue.
  EXPECT_EQ(cache.count_free_in_prefix(h, 2), 2U);
  const auto again = cache.acquire_cached(h, 1);
  EXPECT_EQ(cache.num_free(), 5U);
  EXPECT_EQ(cache.count_free_in_prefix(h, 2), 1U);
  for (BlockId b : cache.free_queue()) {
    EXPECT_NE(b, again[0]);
  }
}

TEST(BlockCache, DuplicateHashKeepsTheFirstBlock) {
  BlockCache cache(4, 4);
  const auto h = hashes_of(seq(1, 4), 4);
  const auto a = fill(cache, h);
  const auto b = fill(cache, h);
  EXPECT_EQ(cache.block_hash(a[0]), h[0]);
  EXPECT_FALSE(cache.block_hash(b[0]).has_value());
  cache.release(b);
  EXPECT_EQ(cache.allocate(), 2U);
  EXPECT_EQ(cache.allocate(), 3U);
  EXPECT_EQ(cache.allocate(), b[0]);  // reusing the duplicate must not drop a's entry
  EXPECT_TRUE(cache.is_cached(h[0]));
  EXPECT_EQ(cache.count_cached_prefix(h), 1U);
}

TEST(BlockCache, AllocateFailsWhenFull) {
  BlockCache cache(2, 16);
  EXPECT_TRUE(cache.allocate().has_value());
  EXPECT_TRUE(cache.allocate().has_value());
  EXPECT_FALSE(cache.allocate().has_value());
  EXPECT_DOUBLE_EQ(cache.usage(), 1.0);
}

}  // namespace
}  // namespace warden::engine
