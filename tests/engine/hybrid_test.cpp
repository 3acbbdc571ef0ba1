// Hybrid models (linear-attention layers beside full attention, as Qwen3.5 / 3.6): the block quantum vLLM
// pads to the linear state's page, the state each running sequence holds in the pool, the rtx5090 preset's
// derived figures, and the flags that change them.
#include <gtest/gtest.h>

#include "engine/cache_layout.hpp"
#include "engine/config_check.hpp"
#include "engine/engine.hpp"
#include "engine/presets.hpp"
#include "engine/run_one.hpp"
#include "engine/seq.hpp"
#include "engine/small_engine.hpp"

namespace warden::engine {
namespace {

using test::req;
using test::seq;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

EngineConfig rtx5090() {
  return *find_preset("rtx5090-qwen3.6-27b");
}

// A small hybrid model with instant steps: one full-attention layer (1 KV head of 8, fp8: 16 B of KV per
// token) beside 3 linear layers of 1,000 B of state each. Blocks: 16 * ceil(1000 / (16 * 16)) = 64
// tokens; a running sequence's state takes 3 of the `blocks`.
EngineConfig small_hybrid(std::uint32_t blocks) {
  EngineConfig c = test::instant_steps(0.01);
  c.num_gpu_blocks = blocks;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 4096;
  c.max_model_len = 4096;
  c.time.num_layers = 1;
  c.time.num_kv_heads = 1;
  c.time.head_dim = 8;
  c.time.kv_dtype_bytes = 1;
  c.time.num_linear_layers = 3;
  c.time.linear_state_bytes = 1000;
  return c;
}

TEST(HybridPreset, DerivedFiguresOfTheRecipeLine) {
  const EngineConfig c = rtx5090();
  ASSERT_TRUE(validate(c)) << validate(c).error().message;
  EXPECT_DOUBLE_EQ(c.time.kv_bytes_per_token(), 32768);       // 2 x 16 layers x 4 heads x 256 x 1 B (fp8)
  EXPECT_DOUBLE_EQ(c.time.weight_bytes(), 23.8e9);            // NVFP4 weights, apart from the KV's dtype
  EXPECT_DOUBLE_EQ(c.time.state_bytes_per_seq(), 153944064);  // 48 x 3,207,168 B
  const CacheLayout l = cache_layout(c);
  EXPECT_EQ(l.block_size, 1568U);  // 16 x ceil(3,207,168 / (16 x 2,048 B per token and layer))
  EXPECT_EQ(l.state_blocks, 3U);   // one block in each of the 3 groups of 16 linear layers
  EXPECT_DOUBLE_EQ(l.block_bytes, 1568.0 * 32768);
  EXPECT_NEAR(l.state_blocks * l.block_bytes, 154e6, 0.2e6);    // ~154 MB per running sequence
  EXPECT_DOUBLE_EQ(padded_state_page_bytes(c), 1568.0 * 2048);  // vLLM's mamba_page_size_padded
  // 31.4 GiB x 0.95 - 23.8 GB - 2.5 GiB = 5.55 GB = 107 blocks: 167,776 tokens, 148,960 beside 4 states.
  EXPECT_EQ(l.num_gpu_blocks, 107U);
  EXPECT_EQ((l.num_gpu_blocks - c.max_num_seqs * l.state_blocks) * l.block_size, 148960U);
  const EngineConfig r = resolve_cache(c);
  EXPECT_EQ(r.block_size, 1568U);
  EXPECT_EQ(r.num_gpu_blocks, 107U);
  EXPECT_EQ(resolve_cache(r).num_gpu_blocks, 107U);  // idempotent
  EXPECT_EQ(c.max_num_seqs, 4U);
  EXPECT_EQ(c.max_num_batched_tokens, 4096U);
  EXPECT_EQ(c.max_model_len, 131072U);
  EXPECT_DOUBLE_EQ(c.gpu_memory_utilization, 0.95);
}

TEST(HybridPreset, KvCacheDtypeChangesTheQuantumAndThePool) {
  EngineConfig c = rtx5090();
  ASSERT_TRUE(set_param(c, "kv-cache-dtype", "auto"));  // bf16, the model's dtype
  EXPECT_DOUBLE_EQ(c.time.kv_bytes_per_token(), 65536);
  CacheLayout l = cache_layout(c);
  EXPECT_EQ(l.block_size, 784U);
  EXPECT_EQ(l.num_gpu_blocks, 107U);  // the same bytes per block: half the tokens
  ASSERT_TRUE(set_param(c, "kv_cache_dtype", "fp8_e4m3"));
  EXPECT_EQ(cache_layout(c).block_size, 1568U);
  const auto bad = set_param(c, "kv-cache-dtype", "int3");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().param, "kv_cache_dtype");
  // Order does not matter: an explicit pool stays, the block follows the dtype set after it.
  ASSERT_TRUE(set_param(c, "num-gpu-blocks", "50"));
  ASSERT_TRUE(set_param(c, "kv-cache-dtype", "bfloat16"));
  l = cache_layout(c);
  EXPECT_EQ(l.num_gpu_blocks, 50U);
  EXPECT_EQ(l.block_size, 784U);
  // A block size asked above the padded one is kept, as vLLM keeps it.
  ASSERT_TRUE(set_param(c, "block-size", "2048"));
  EXPECT_EQ(cache_layout(c).block_size, 2048U);
}

TEST(HybridPreset, GpuMemoryUtilizationSizesThePool) {
  EngineConfig c = rtx5090();
  ASSERT_TRUE(set_param(c, "gpu-memory-utilization", "0.9"));
  // 31.4 GiB x 0.9 - 23.8 GB - 2.5 GiB = 3.86 GB = 75 blocks.
  EXPECT_EQ(cache_layout(c).num_gpu_blocks, 75U);
  ASSERT_TRUE(set_param(c, "gpu-memory-utilization", "0.75"));
  EXPECT_FALSE(validate(c));  // the weights and the reserve leave no room
  EngineConfig dense = *find_preset("a4000-qwen3-4b");
  ASSERT_TRUE(set_param(dense, "gpu-memory-utilization", "0.5"));
  EXPECT_EQ(cache_layout(dense).num_gpu_blocks, 2500U);  // a set pool stays: the utilization is a label
}

TEST(HybridPreset, KvCacheMemoryBytesSizesThePool) {
  EngineConfig c = rtx5090();
  ASSERT_TRUE(set_param(c, "kv-cache-memory-bytes", std::to_string(100.5 * 1568 * 32768)));
  EXPECT_EQ(cache_layout(c).num_gpu_blocks, 100U);  // whole blocks
  ASSERT_TRUE(set_param(c, "num-gpu-blocks", "50"));
  EXPECT_EQ(cache_layout(c).num_gpu_blocks, 100U);  // as vLLM's --kv-cache-memory-bytes, it decides the pool
  ASSERT_TRUE(set_param(c, "kv-cache-dtype", "auto"));
  EXPECT_EQ(cache_layout(c).num_gpu_blocks, 100U);  // 784 tokens of bf16: the same bytes per block
  EXPECT_FALSE(set_param(c, "kv-cache-memory-bytes", "lots"));
}

TEST(HybridPreset, YamlRoundTripKeepsTheDerivation) {
  EngineConfig c = rtx5090();
  ASSERT_TRUE(set_param(c, "kv-cache-dtype", "auto"));
  const auto back = parse_preset_yaml(to_yaml(c), *find_preset("instant"));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(to_yaml(*back), to_yaml(c));
  EXPECT_EQ(cache_layout(*back).block_size, 784U);
  EXPECT_EQ(cache_layout(*back).num_gpu_blocks, 107U);
}

TEST(HybridPreset, OffloadHoldsWholeBlocksOfAttentionKv) {
  EngineConfig c = rtx5090();
  c.kv_offloading_size = 16;
  // 16 GiB / (1,568 tokens x 32,768 B) = 334 blocks: 523,712 tokens.
  EXPECT_EQ(offload_capacity_blocks(c), 334U);
  c.kv_offloading_size = 0;
  EXPECT_EQ(offload_capacity_blocks(c), 0U);
  EngineConfig a4000 = *find_preset("a4000-qwen3-4b");
  a4000.kv_offloading_size = 16;
  EXPECT_EQ(offload_capacity_blocks(a4000), 7281U);  // 16 GiB / (16 x 147,456 B)
}

TEST(Hybrid, PrefixHitsCountWholeBlocksOnly) {
  const EngineConfig c = rtx5090();
  Engine engine(c, 1);
  const Tokens first = seq(1000, 3 * 1568 + 100);
  ASSERT_TRUE(engine.add_request(req(1, first, 1)));
  double now = 0;
  while (engine.has_work()) {
    now += engine.step(now).duration;
  }
  // A prompt sharing 2 blocks and 1,000 tokens more hits the 2 blocks (3,136 tokens), not 4,136.
  Tokens second(first.begin(), first.begin() + 2 * 1568 + 1000);
  const Tokens tail = seq(90000, 500);
  second.insert(second.end(), tail.begin(), tail.end());
  EXPECT_EQ(engine.cached_prefix_tokens(second), 2U * 1568);
  // One token short of a block: nothing.
  Tokens third(first.begin(), first.begin() + 1567);
  third.insert(third.end(), tail.begin(), tail.end());
  EXPECT_EQ(engine.cached_prefix_tokens(third), 0U);
  ASSERT_TRUE(engine.add_request(req(2, second, 1)));
  Usage usage;
  while (engine.has_work()) {
    const auto r = engine.step(now);
    now += r.duration;
    for (const auto& e : r.events) {
      usage = e.usage;
    }
  }
  EXPECT_EQ(usage.cached_tokens, 2U * 1568);
  EXPECT_EQ(engine.metrics().block_size, 1568U);
  EXPECT_EQ(engine.metrics().num_gpu_blocks, 107U);
}

TEST(Hybrid, EachRunningSequenceHoldsItsStateInThePool) {
  // 12 blocks of 64 tokens. Two requests of 2 blocks each hold 2 x (2 + 3) = 10 blocks; a third of 2
  // blocks would need 5 of the 2 left, and waits.
  Engine engine(small_hybrid(12), 1);
  EXPECT_EQ(engine.config().block_size, 64U);
  for (RequestId id = 1; id <= 3; ++id) {
    ASSERT_TRUE(engine.add_request(req(id, seq(static_cast<TokenId>(id * 1000), 100), 20)));
  }
  engine.step(0);
  EXPECT_EQ(engine.running_ids().size(), 2U);
  EXPECT_EQ(engine.waiting_ids().size(), 1U);
  EXPECT_EQ(engine.cache().num_free(), 2U);
  double now = 0;
  while (engine.has_work()) {
    now += engine.step(now).duration;
  }
  EXPECT_EQ(engine.cache().num_free(), 12U);  // states released with their requests
}

TEST(Hybrid, ARequestMustFitThePoolBesideItsState) {
  Engine engine(small_hybrid(10), 1);
  // 7 blocks of sequence + 3 of state = 10: fits. 8 + 3 = 11: refused.
  EXPECT_TRUE(engine.add_request(req(1, seq(1, 7 * 64 - 10), 10)));
  const auto r = engine.add_request(req(2, seq(1, 7 * 64 + 10), 10));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("needs 11 KV blocks"), std::string::npos) << r.error().message;
}

TEST(Hybrid, StepReadsAndWritesEachSequencesState) {
  StepTimeModel m = rtx5090().time;
  const ScheduledChunk two[] = {{1, 10000}, {1, 10000}};
  const ScheduledChunk one[] = {{1, 10000}};
  const double per_seq = m.cost(two).memory_s - m.cost(one).memory_s;
  // A sequence adds its 10,001 tokens of KV and its state, read and written.
  EXPECT_NEAR(per_seq, (10001.0 * 32768 + 2 * 153944064) / (1.792e12 * 0.85), 1e-12);
  m.num_linear_layers = 0;
  EXPECT_NEAR(m.cost(two).memory_s - m.cost(one).memory_s, 10001.0 * 32768 / (1.792e12 * 0.85), 1e-12);
}

TEST(HybridPreset, DecodeAndPrefillTimes) {
  const StepTimeModel m = rtx5090().time;
  // One sequence decoding at 58k tokens: (23.8 GB + 58k x 32 KiB + 2 x 154 MB) / 1.52 TB/s + 3.5 ms.
  const ScheduledChunk decode[] = {{1, 58000}};
  EXPECT_NEAR(m.step_seconds(decode), 0.0208, 0.0005);
  // A cold 58k-token prefill in 4,096-token chunks: ~21 s of compute (the issue's ~18 s).
  double total = 0;
  for (std::uint32_t done = 0; done < 58000; done += 4096) {
    const ScheduledChunk chunk[] = {{std::min(4096U, 58000 - done), done}};
    total += m.step_seconds(chunk);
  }
  EXPECT_NEAR(total, 21.3, 0.5);
}

}  // namespace
}  // namespace warden::engine
