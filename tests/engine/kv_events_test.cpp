// The engine's KV cache events on a dense model: what a conversation stores, what pressure evicts, and a
// replay of the events that always agrees with the cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <unordered_set>

#include "engine/engine.hpp"
#include "engine/kv_event_steps.hpp"
#include "engine/seq.hpp"
#include "engine/small_engine.hpp"

namespace warden::engine {
namespace {

using test::drain;
using test::only;
using test::req;
using test::seq;

// Blocks of 4 tokens, every step 10 ms, events on.
EngineConfig small(std::uint32_t blocks, std::uint32_t budget = 64) {
  EngineConfig c = test::instant_steps(0.01);
  c.block_size = 4;
  c.num_gpu_blocks = blocks;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = budget;
  c.max_model_len = 1000;
  c.kv_events = true;
  return c;
}

RequestSpec in_session(RequestId id, Tokens prompt, int max_tokens, std::string session) {
  RequestSpec r = req(id, std::move(prompt), max_tokens);
  r.session_id = std::move(session);
  return r;
}

// The hashes of `events` in order, and a check that each event continues the chain of the one before.
std::vector<BlockHash> chained_hashes(const std::vector<KvEvent>& events, BlockHash parent) {
  std::vector<BlockHash> out;
  for (const KvEvent& e : events) {
    EXPECT_EQ(e.parent, parent);
    EXPECT_EQ(e.token_ids.size(), e.hashes.size() * 4);
    out.insert(out.end(), e.hashes.begin(), e.hashes.end());
    parent = e.hashes.back();
  }
  return out;
}

TEST(KvEvents, TwoTurnsStoreChainedBlocksWithTheSessionId) {
  Engine engine(small(100), 1);
  double now = 0;
  const Tokens a = seq(1000, 10);
  ASSERT_TRUE(engine.add_request(in_session(1, a, 7, "s1")));
  const std::vector<KvEvent> turn1 = drain(engine, now);
  // The prompt's 2 full blocks in one event; the reply's tokens fill blocks 2 and 3 while decoding (KV of
  // 16 of its 17 tokens), one event each; the last partial block is never announced.
  const auto stored1 = only(turn1, test::gpu_stored);
  ASSERT_EQ(stored1.size(), 3U);
  EXPECT_EQ(stored1[0].hashes.size(), 2U);
  EXPECT_EQ(Tokens(stored1[0].token_ids), Tokens(a.begin(), a.begin() + 8));
  for (const KvEvent& e : stored1) {
    EXPECT_EQ(e.session_id, "s1");
    EXPECT_EQ(e.block_size, 4U);
    EXPECT_EQ(e.group_kind, KvEvent::GroupKind::full_attention);
  }
  // Together they are the conversation's first 16 tokens, chained from the root.
  Tokens conversation;
  for (const KvEvent& e : stored1) {
    conversation.insert(conversation.end(), e.token_ids.begin(), e.token_ids.end());
  }
  ASSERT_EQ(conversation.size(), 16U);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), conversation.begin()));
  std::vector<BlockHash> expected;
  extend_block_hashes(conversation, 4, expected);
  EXPECT_EQ(chained_hashes(stored1, kRootBlockHash), expected);
  EXPECT_TRUE(only(turn1, test::gpu_removed).empty());

  // Turn 2: turn 1's 16 tokens are cached (4 blocks hit, not announced again); the new ones continue the
  // chain from block 3.
  Tokens b = conversation;
  b.insert(b.end(), {7, 8, 9, 10, 11, 12});
  ASSERT_TRUE(engine.add_request(in_session(2, b, 1, "s1")));
  const auto stored2 = only(drain(engine, now), test::gpu_stored);
  ASSERT_EQ(stored2.size(), 1U);
  EXPECT_EQ(stored2[0].parent, expected[3]);
  EXPECT_EQ(Tokens(stored2[0].token_ids), Tokens(b.begin() + 16, b.begin() + 20));
  EXPECT_EQ(stored2[0].session_id, "s1");
}

TEST(KvEvents, EvictionsUnderPressureRemoveExactlyTheEvictedHashes) {
  Engine engine(small(6), 1);
  double now = 0;
  const Tokens a = seq(1000, 20);
  ASSERT_TRUE(engine.add_request(req(1, a, 1)));
  drain(engine, now);
  std::vector<BlockHash> ha;
  extend_block_hashes(a, 4, ha);
  // B takes the never-used block, then A's blocks from its tail (freed in reverse): 4, 3, 2, 1.
  ASSERT_TRUE(engine.add_request(req(2, seq(5000, 20), 1)));
  const auto removed = only(drain(engine, now), test::gpu_removed);
  ASSERT_EQ(removed.size(), 4U);
  for (std::size_t i = 0; i < removed.size(); ++i) {
    EXPECT_EQ(removed[i].hashes, std::vector<BlockHash>{ha[4 - i]});
    EXPECT_FALSE(engine.cache().is_cached(ha[4 - i]));
  }
  EXPECT_TRUE(engine.cache().is_cached(ha[0]));
}

TEST(KvEvents, ADuplicateOfACachedBlockIsAnnouncedAsVllmDoes) {
  // The second run of A recomputes its last block (a hit leaves one token to compute): vLLM caches the
  // copy beside the first and announces it; the model keeps one block per hash but announces it too.
  Engine engine(small(100), 1);
  double now = 0;
  const Tokens a = seq(1000, 20);
  ASSERT_TRUE(engine.add_request(req(1, a, 1)));
  drain(engine, now);
  ASSERT_TRUE(engine.add_request(req(2, a, 1)));
  const auto stored = only(drain(engine, now), test::gpu_stored);
  ASSERT_EQ(stored.size(), 1U);
  std::vector<BlockHash> ha;
  extend_block_hashes(a, 4, ha);
  EXPECT_EQ(stored[0].hashes, std::vector<BlockHash>{ha[4]});
  EXPECT_EQ(stored[0].parent, ha[3]);
}

// Replaying every step's events into a set of hashes gives the cache's hashes after every step, through
// arrivals, aborts, hits, evictions and preemptions.
TEST(KvEvents, ReplayMatchesTheCacheAtEveryStep) {
  EngineConfig c = small(24, 24);
  c.max_num_seqs = 5;
  Engine engine(c, 11);
  std::uint64_t x = 77;
  auto rnd = [&](std::uint64_t bound) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 33U) % bound;
  };
  std::unordered_set<BlockHash> replayed;
  std::vector<RequestId> live;
  double now = 0;
  for (RequestId next = 1, op = 0; op < 3000; ++op) {
    const auto choice = rnd(10);
    if (choice < 3) {
      Tokens prompt = seq(1, 4 + rnd(40));
      prompt.push_back(static_cast<TokenId>(100 + rnd(5)));
      ASSERT_TRUE(engine.add_request(req(next, prompt, 1 + static_cast<int>(rnd(30)), now)));
      live.push_back(next++);
    } else if (choice == 3 && !live.empty()) {
      engine.abort(live[rnd(live.size())]);  // false when it already finished: fine
    } else if (engine.has_work()) {
      const StepResult r = engine.step(now);
      now += r.duration;
      for (const KvEvent& e : r.kv_events) {
        for (BlockHash h : e.hashes) {
          if (e.kind == KvEvent::Kind::stored) {
            replayed.insert(h);
          } else {
            EXPECT_EQ(replayed.erase(h), 1U) << "removed a hash never stored";
          }
        }
      }
      ASSERT_EQ(replayed, test::cached_hashes(engine.cache())) << "after op " << op;
    }
  }
  EXPECT_GT(engine.metrics().num_preemptions_total, 0U);
  EXPECT_GT(engine.metrics().prefix_cache_hits_total, 0U);
}

TEST(KvEvents, OffByDefaultAndOutputsUnchanged) {
  EXPECT_FALSE(EngineConfig{}.kv_events);
  auto run = [](bool on) {
    EngineConfig c = small(6);
    c.kv_events = on;
    Engine engine(c, 3);
    std::vector<std::pair<double, std::vector<TokenId>>> steps;  // each step's duration and tokens
    std::size_t kv = 0;
    double now = 0;
    for (RequestId id = 1; id <= 3; ++id) {
      EXPECT_TRUE(engine.add_request(in_session(id, seq(1000 * id, 18), 5, "s")));
    }
    while (engine.has_work()) {
      StepResult r = engine.step(now);
      now += r.duration;
      kv += r.kv_events.size();
      std::vector<TokenId> tokens;
      for (const Event& e : r.events) {
        tokens.push_back(e.token);
      }
      steps.emplace_back(r.duration, tokens);
    }
    return std::pair{steps, kv};
  };
  const auto off = run(false);
  const auto on = run(true);
  EXPECT_EQ(off.second, 0U);
  EXPECT_GT(on.second, 0U);
  EXPECT_EQ(off.first, on.first);
}

}  // namespace
}  // namespace warden::engine
