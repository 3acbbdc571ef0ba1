// The offload tier (vLLM's native CPU KV offload): its LRU store, and the engine loading a prefix the GPU
// cache evicted from it instead of computing it again.
#include <gtest/gtest.h>

#include "engine/config_check.hpp"
#include "engine/engine.hpp"
#include "engine/offload_tier.hpp"
#include "engine/seq.hpp"
#include "engine/small_engine.hpp"

namespace warden::engine {
namespace {

using test::seq;

TEST(OffloadTier, KeepsTheMostRecentlyUsedBlocks) {
  OffloadTier tier(3);
  for (BlockHash h : {1, 2, 3}) {
    tier.store(h);
  }
  const std::vector<BlockHash> first{1};
  EXPECT_EQ(tier.lookup(first), 1U);  // 1 is now the most recently used: 2 goes first
  tier.store(4);
  EXPECT_FALSE(tier.contains(2));
  EXPECT_TRUE(tier.contains(1));
  EXPECT_TRUE(tier.contains(3));
  EXPECT_EQ(tier.size(), 3U);
  tier.store(3);  // stored again: refreshed, not duplicated
  tier.store(5);
  EXPECT_FALSE(tier.contains(1));
  EXPECT_TRUE(tier.contains(3));
}

TEST(OffloadTier, LookupStopsAtTheFirstMissAndCapacityZeroHoldsNothing) {
  OffloadTier tier(8);
  for (BlockHash h : {10, 11, 13}) {
    tier.store(h);
  }
  const std::vector<BlockHash> chain{10, 11, 12, 13};
  EXPECT_EQ(tier.lookup(chain), 2U);
  OffloadTier off(0);
  off.store(10);
  EXPECT_EQ(off.size(), 0U);
  EXPECT_EQ(off.lookup(chain), 0U);
}

EngineConfig small(double offload_gib) {
  return test::small_offload(offload_gib);
}

// Runs `prompt` alone to its end; returns the usage and the first step's stats.
std::pair<Usage, StepStats> run_one(Engine& engine, RequestId id, Tokens prompt) {
  EXPECT_TRUE(engine.add_request(test::req(id, std::move(prompt), 1)));
  Usage usage;
  StepStats first;
  for (bool at_first = true; engine.has_work(); at_first = false) {
    const StepResult r = engine.step(0);
    if (at_first) {
      first = r.stats;
    }
    for (const Event& e : r.events) {
      if (e.finished) {
        usage = e.usage;
      }
    }
  }
  return {usage, first};
}

const Tokens kA = seq(1000, 20);

// A's 5 blocks, then B's 40 tokens take all 10 GPU blocks, so A's prefix is gone from the GPU cache; then A
// again: what it found, and its first step.
std::pair<Usage, StepStats> a_after_eviction(Engine& engine) {
  run_one(engine, 1, kA);
  run_one(engine, 2, seq(5000, 40));
  EXPECT_EQ(engine.cached_prefix_tokens(kA), 0U);
  return run_one(engine, 3, kA);
}

TEST(EngineOffload, APrefixTheGpuEvictedIsLoadedNotComputed) {
  Engine engine(small(0.02), 1);  // 36 blocks of host memory
  const auto [usage, first] = a_after_eviction(engine);
  // (20 - 1) / 4 = 4 blocks come back over PCIe; the last 4 tokens are computed.
  EXPECT_EQ(usage.cached_tokens, 16U);
  EXPECT_EQ(first.num_prefill_tokens, 4U);
  EXPECT_NEAR(first.load_s, 16 * 147456.0 / 24e9, 1e-12);
  const Metrics m = engine.metrics();
  EXPECT_EQ(m.prefix_cache_hits_total, 0U);  // vLLM's prefix counters are the GPU cache's
  EXPECT_EQ(m.external_prefix_cache_hits_total, 16U);
  EXPECT_EQ(m.external_prefix_cache_queries_total, 20U + 40U + 20U);
  // Loaded blocks are in the GPU cache again.
  EXPECT_EQ(engine.cached_prefix_tokens(kA), 16U);
}

TEST(EngineOffload, OffWhenNoHostMemoryIsGiven) {
  Engine engine(small(0), 1);
  const auto [usage, first] = a_after_eviction(engine);
  EXPECT_EQ(usage.cached_tokens, 0U);
  EXPECT_EQ(first.num_prefill_tokens, 20U);
  EXPECT_EQ(first.load_s, 0.0);
  EXPECT_EQ(engine.metrics().external_prefix_cache_queries_total, 0U);
}

TEST(EngineOffload, ThePrefixMustStartWhereTheGpuHitsEnd) {
  // 12 blocks of host memory: B's 10 blocks push out A's first 3 (the least recently stored), so nothing
  // of A follows the (empty) GPU hit and all of it is computed.
  Engine engine(small(0.0066), 1);
  const auto [usage, first] = a_after_eviction(engine);
  EXPECT_EQ(usage.cached_tokens, 0U);
  EXPECT_EQ(first.num_prefill_tokens, 20U);
}

TEST(EngineOffload, HostMemoryMustBeANonNegativeSize) {
  EngineConfig c = small(-1);
  EXPECT_FALSE(validate(c).has_value());
  c.kv_offloading_size = 0;
  c.time.pcie_bandwidth = 0;
  EXPECT_FALSE(validate(c).has_value());
}

}  // namespace
}  // namespace warden::engine
