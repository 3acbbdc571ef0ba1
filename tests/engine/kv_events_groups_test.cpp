// The engine's KV cache events beyond one attention group on the GPU: a hybrid model's mamba groups
// (vLLM's align mode: only the block that keeps the state at a step's end, when it ends on its boundary)
// and the CPU offload tier's thin events.
#include <gtest/gtest.h>

#include "engine/engine.hpp"
#include "engine/kv_event_steps.hpp"
#include "engine/presets.hpp"
#include "engine/seq.hpp"
#include "engine/small_engine.hpp"

namespace warden::engine {
namespace {

using test::drain;
using test::only;
using test::req;
using test::seq;

bool stored(const KvEvent& e) {
  return e.kind == KvEvent::Kind::stored;
}

// The events of one step, one store per group: group 0 attention, 1..3 mamba, the same span of tokens.
void expect_one_store_per_group(const std::vector<KvEvent>& events, const std::vector<BlockHash>& attention,
                                const std::vector<BlockHash>& mamba) {
  ASSERT_EQ(events.size(), 4U);
  for (std::uint32_t g = 0; g < 4; ++g) {
    const KvEvent& e = events[g];
    EXPECT_EQ(e.group_idx, g);
    EXPECT_EQ(e.group_kind, g == 0 ? KvEvent::GroupKind::full_attention : KvEvent::GroupKind::mamba);
    EXPECT_EQ(e.hashes, g == 0 ? attention : mamba);
    EXPECT_EQ(e.token_ids, events[0].token_ids);
    EXPECT_EQ(e.parent, events[0].parent);
    EXPECT_EQ(e.block_size, 1568U);
    EXPECT_EQ(e.session_id, "agent-7");
  }
}

TEST(KvEventsHybrid, ThePresetStoresInEachOfItsFourGroups) {
  EngineConfig c = *find_preset("rtx5090-qwen3.6-27b");
  c.kv_events = true;
  Engine engine(c, 1);
  ASSERT_EQ(engine.config().block_size, 1568U);
  // 1,567 prompt tokens: nothing full after the prefill; the first decode step fills block 0 and the
  // state at its end is the checkpoint the mamba groups cache.
  RequestSpec r = req(1, seq(1000, 1567), 3);
  r.session_id = "agent-7";
  ASSERT_TRUE(engine.add_request(std::move(r)));
  EXPECT_TRUE(engine.step(0).kv_events.empty());
  const StepResult decode = engine.step(1);
  ASSERT_FALSE(decode.kv_events.empty());
  const Tokens& block0 = decode.kv_events[0].token_ids;
  ASSERT_EQ(block0.size(), 1568U);
  const BlockHash h0 = hash_block(kRootBlockHash, block0);
  expect_one_store_per_group(decode.kv_events, {h0}, {h0});
}

TEST(KvEventsHybrid, AStepEndingInsideABlockCachesNoMambaState) {
  EngineConfig c = *find_preset("rtx5090-qwen3.6-27b");
  c.kv_events = true;
  Engine engine(c, 1);
  // 3,146 tokens in one step: blocks 0 and 1 fill, the state at token 3,146 is in the partial block 2.
  const Tokens prompt = seq(1000, 2 * 1568 + 10);
  RequestSpec r = req(1, prompt, 1);
  r.session_id = "agent-7";
  ASSERT_TRUE(engine.add_request(std::move(r)));
  std::vector<BlockHash> h;
  extend_block_hashes(prompt, 1568, h);
  expect_one_store_per_group(engine.step(0).kv_events, h, {});
}

TEST(KvEventsHybrid, EvictingACheckpointRemovesItFromEveryGroup) {
  EngineConfig c = *find_preset("rtx5090-qwen3.6-27b");
  c.kv_events = true;
  c.num_gpu_blocks = 3 + 3;  // one sequence's state and 3 blocks
  c.max_num_seqs = 1;
  Engine engine(c, 1);
  double now = 0;
  // A: 1,567 tokens then 2 decode steps: block 0 stored with a checkpoint.
  ASSERT_TRUE(engine.add_request(req(1, seq(1000, 1567), 2)));
  const auto a = only(drain(engine, now), stored);
  ASSERT_EQ(a.size(), 4U);
  // B needs all 3 blocks: A's block 0 is evicted, from the attention group and the 3 mamba groups.
  ASSERT_TRUE(engine.add_request(req(2, seq(9000, 3 * 1568 - 10), 1)));
  const auto removed =
      only(drain(engine, now), [](const KvEvent& e) { return e.kind == KvEvent::Kind::removed; });
  ASSERT_EQ(removed.size(), 4U);
  for (std::uint32_t g = 0; g < 4; ++g) {
    EXPECT_EQ(removed[g].group_idx, g);
    EXPECT_EQ(removed[g].hashes, a[0].hashes);
  }
}

// GPU: 10 blocks of 4 tokens; host memory for 12 blocks.
EngineConfig offload() {
  EngineConfig c = test::small_offload(0.0066);
  c.kv_events = true;
  return c;
}

bool cpu(const KvEvent& e) {
  return e.medium == KvEvent::Medium::cpu;
}

TEST(KvEventsOffload, ThinEventsForEveryBlockStoredAndEvictedOnTheHost) {
  Engine engine(offload(), 1);
  double now = 0;
  const Tokens a = seq(1000, 20);
  RequestSpec r = req(1, a, 1);
  r.session_id = "s";
  ASSERT_TRUE(engine.add_request(std::move(r)));
  std::vector<BlockHash> ha;
  extend_block_hashes(a, 4, ha);
  const auto first = only(drain(engine, now), cpu);
  ASSERT_EQ(first.size(), 5U);
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].kind, KvEvent::Kind::stored);
    EXPECT_EQ(first[i].hashes, std::vector<BlockHash>{ha[i]});
    EXPECT_TRUE(first[i].token_ids.empty());
    EXPECT_EQ(first[i].block_size, 0U);
    EXPECT_EQ(first[i].parent, kRootBlockHash);
    EXPECT_EQ(first[i].session_id, "");
  }
  // B's 10 blocks fill the host's 12: A's 3 least recently stored go, each just before the store that
  // needs its room.
  ASSERT_TRUE(engine.add_request(req(2, seq(5000, 40), 1)));
  const auto second = only(drain(engine, now), cpu);
  ASSERT_EQ(second.size(), 13U);
  std::vector<BlockHash> removed;
  for (const KvEvent& e : second) {
    if (e.kind == KvEvent::Kind::removed) {
      removed.push_back(e.hashes.at(0));
    }
  }
  EXPECT_EQ(removed, (std::vector<BlockHash>{ha[0], ha[1], ha[2]}));
  EXPECT_EQ(second.back().kind, KvEvent::Kind::stored);
}

}  // namespace
}  // namespace warden::engine
