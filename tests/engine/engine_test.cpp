#include "engine/engine.hpp"

#include <gtest/gtest.h>

#include <map>

#include "engine/presets.hpp"

#include "engine/seq.hpp"
#include "engine/small_engine.hpp"

namespace warden::engine {
namespace {

constexpr double kStep = 0.01;

// Every step costs kStep: hardware so fast that only the per-step overhead counts.
EngineConfig tiny(std::uint32_t blocks, std::uint32_t max_seqs, std::uint32_t budget) {
  EngineConfig c = test::instant_steps(kStep);
  c.block_size = 4;
  c.num_gpu_blocks = blocks;
  c.max_num_seqs = max_seqs;
  c.max_num_batched_tokens = budget;
  c.max_model_len = 1000;
  return c;
}

using test::req;
using test::seq;

struct Trace {
  int steps = 0;
  double now = 0;
  std::map<RequestId, Tokens> tokens;
  std::map<RequestId, Usage> usage;
  std::map<RequestId, int> first_token_step;
  std::map<RequestId, Usage> first_usage;
  std::map<RequestId, int> finish_step;
  std::vector<RequestId> finish_order;
  std::vector<std::pair<int, RequestId>> preemptions;
  std::vector<double> durations;
};

void apply(Trace& t, const StepResult& r) {
  ++t.steps;
  t.now += r.duration;
  t.durations.push_back(r.duration);
  for (const auto& e : r.events) {
    if (e.kind == Event::Kind::preempted) {
      t.preemptions.emplace_back(t.steps, e.request);
      continue;
    }
    EXPECT_EQ(e.index, t.tokens[e.request].size());
    t.tokens[e.request].push_back(e.token);
    if (e.first_token) {
      t.first_token_step[e.request] = t.steps;
      t.first_usage[e.request] = e.usage;
    }
    if (e.finished) {
      t.usage[e.request] = e.usage;
      t.finish_step[e.request] = t.steps;
      t.finish_order.push_back(e.request);
    }
  }
}

Trace run(Engine& engine, Trace t = {}) {
  for (int guard = 0; engine.has_work() && guard < 100000; ++guard) {
    apply(t, engine.step(t.now));
  }
  EXPECT_FALSE(engine.has_work());
  return t;
}

TEST(Engine, SingleRequestPrefillThenDecodeExactlyMaxTokens) {
  Engine engine(tiny(100, 8, 64), 1);
  ASSERT_TRUE(engine.add_request(req(1, seq(100, 10), 5)));
  const Trace t = run(engine);
  EXPECT_EQ(t.steps, 5);  // 1 prefill step emitting token 0, then 4 decode steps
  EXPECT_EQ(t.first_token_step.at(1), 1);
  EXPECT_EQ(t.tokens.at(1).size(), 5U);
  const Usage u = t.usage.at(1);
  EXPECT_EQ(u.prompt_tokens, 10U);
  EXPECT_EQ(u.cached_tokens, 0U);
  EXPECT_EQ(u.completion_tokens, 5U);
  EXPECT_EQ(u.finish_reason, FinishReason::length);
  EXPECT_NEAR(t.now, 5 * kStep, 1e-9);
  const Metrics m = engine.metrics();
  EXPECT_EQ(m.generation_tokens_total, 5U);
  EXPECT_EQ(m.prompt_tokens_total, 10U);
  EXPECT_EQ(m.requests_finished_total, 1U);
  EXPECT_EQ(m.time_to_first_token.count, 1U);
  EXPECT_NEAR(m.time_to_first_token.sum, kStep, 1e-9);
  EXPECT_EQ(m.num_running, 0U);
  EXPECT_DOUBLE_EQ(m.kv_cache_usage, 0.0);
}

TEST(Engine, MaxNumSeqsRespected) {
  Engine engine(tiny(100, 2, 64), 1);
  for (RequestId id = 1; id <= 3; ++id) {
    ASSERT_TRUE(engine.add_request(req(id, seq(100 * id, 8), 3)));
  }
  engine.step(0);
  EXPECT_EQ(engine.running_ids(), (std::vector<RequestId>{1, 2}));
  EXPECT_EQ(engine.waiting_ids(), (std::vector<RequestId>{3}));
  EXPECT_EQ(engine.metrics().num_waiting, 1U);
}

TEST(Engine, ChunkedPrefillWithinTheTokenBudget) {
  Engine engine(tiny(100, 8, 8), 1);
  ASSERT_TRUE(engine.add_request(req(1, seq(1, 4), 10)));
  ASSERT_TRUE(engine.add_request(req(2, seq(100, 20), 2)));
  // Step 1: request 1 prefills 4 tokens and emits; request 2 gets the 4 left of the budget.
  StepResult s = engine.step(0);
  EXPECT_EQ(s.stats.num_prefill_tokens, 8U);
  ASSERT_EQ(s.events.size(), 1U);
  EXPECT_EQ(s.events[0].request, 1U);
  // Step 2: request 1 decodes 1 token, request 2 prefills 7 (4 + 7 = 11 of 20).
  s = engine.step(1);
  EXPECT_EQ(s.stats.num_decode_tokens, 1U);
  EXPECT_EQ(s.stats.num_prefill_tokens, 7U);
  ASSERT_EQ(s.events.size(), 1U);
  // Step 3: 1 + 7 (18 of 20). Step 4: 1 + 2: request 2's first token.
  s = engine.step(2);
  EXPECT_EQ(s.stats.num_prefill_tokens, 7U);
  EXPECT_EQ(s.events.size(), 1U);
  s = engine.step(3);
  EXPECT_EQ(s.stats.num_prefill_tokens, 2U);
  ASSERT_EQ(s.events.size(), 2U);
  EXPECT_EQ(s.events[1].request, 2U);
  EXPECT_TRUE(s.events[1].first_token);
}

TEST(Engine, WaitingQueueIsFirstComeFirstServed) {
  Engine engine(tiny(100, 1, 64), 1);
  ASSERT_TRUE(engine.add_request(req(3, seq(300, 6), 2)));
  ASSERT_TRUE(engine.add_request(req(1, seq(100, 6), 2)));
  ASSERT_TRUE(engine.add_request(req(2, seq(200, 6), 2)));
  const Trace t = run(engine);
  EXPECT_EQ(t.finish_order, (std::vector<RequestId>{3, 1, 2}));
  EXPECT_EQ(t.steps, 6);
}

EngineConfig by_priority(EngineConfig c) {
  c.scheduling_policy = SchedulingPolicy::priority;
  return c;
}

RequestSpec req(RequestId id, Tokens prompt, int max_tokens, double arrival, std::int64_t priority) {
  RequestSpec r = req(id, std::move(prompt), max_tokens, arrival);
  r.priority = priority;
  return r;
}

// vLLM's priority queue: lower priority first, then earlier arrival, then the order added. FCFS ignores it.
TEST(Engine, PriorityPolicyOrdersTheWaitingQueue) {
  for (const bool priority : {true, false}) {
    Engine engine(priority ? by_priority(tiny(100, 1, 64)) : tiny(100, 1, 64), 1);
    ASSERT_TRUE(engine.add_request(req(3, seq(300, 6), 2, 0.0, 5)));
    ASSERT_TRUE(engine.add_request(req(1, seq(100, 6), 2, 2.0, 1)));
    ASSERT_TRUE(engine.add_request(req(2, seq(200, 6), 2, 1.0, 1)));
    ASSERT_TRUE(engine.add_request(req(4, seq(400, 6), 2, 1.0, 1)));
    const std::vector<RequestId> expected =
        priority ? std::vector<RequestId>{2, 4, 1, 3} : std::vector<RequestId>{3, 1, 2, 4};
    EXPECT_EQ(engine.waiting_ids(), expected);
    EXPECT_EQ(run(engine).finish_order, expected);
  }
}

// Block size 4, 6 blocks. A (priority 1, admitted first) and B (priority 0), 8- and 9-token prompts: 2 + 3
// blocks at step 1, A's third block at step 2 fills the cache. Step 5: A decodes inside its third block,
// then B needs a fourth. FCFS preempts the latest admitted, B itself; priority preempts A (the largest
// priority), already scheduled in this step: its token is taken back and B runs alone.
TEST(Engine, PriorityPolicyPreemptsTheLowestPriorityRunningRequest) {
  for (const bool priority : {true, false}) {
    Engine engine(priority ? by_priority(tiny(6, 8, 64)) : tiny(6, 8, 64), 1);
    ASSERT_TRUE(engine.add_request(req(1, seq(1, 8), 12, 0.0, 1)));
    ASSERT_TRUE(engine.add_request(req(2, seq(100, 9), 12, 0.0, 0)));
    Trace t;
    for (int i = 0; i < 4; ++i) {
      apply(t, engine.step(t.now));
    }
    EXPECT_TRUE(t.preemptions.empty());
    const StepResult s5 = engine.step(t.now);
    apply(t, s5);
    ASSERT_EQ(t.preemptions.size(), 1U);
    const RequestId victim = priority ? 1 : 2;
    EXPECT_EQ(t.preemptions[0], (std::pair<int, RequestId>{5, victim}));
    EXPECT_EQ(engine.waiting_ids(), (std::vector<RequestId>{victim}));
    EXPECT_EQ(engine.running_ids(), (std::vector<RequestId>{victim == 1 ? 2U : 1U}));
    // Priority: B decodes alone; FCFS: A's token was scheduled before B found no block.
    EXPECT_EQ(s5.stats.num_scheduled_requests, 1U);
    ASSERT_EQ(s5.events.size(), 2U);  // the preemption and the survivor's token
    EXPECT_EQ(s5.events[1].request, victim == 1 ? 2U : 1U);
    t = run(engine, t);
    EXPECT_EQ(t.finish_order.front(), victim == 1 ? 2U : 1U);
    EXPECT_EQ(t.tokens.at(1).size(), 12U);
    EXPECT_EQ(t.tokens.at(2).size(), 12U);
  }
}

// The first running request is the lowest priority one and the first to need a block: it preempts itself
// before anything is scheduled. The step must still run the others (vLLM schedules again at once), not
// return an empty step while work remains (a driver would then wait forever).
TEST(Engine, PriorityPolicySelfPreemptionOfTheFirstRunningRequestStillRunsTheOthers) {
  Engine engine(by_priority(tiny(6, 8, 64)), 1);
  ASSERT_TRUE(engine.add_request(req(1, seq(1, 8), 12, 0.0, 1)));
  ASSERT_TRUE(engine.add_request(req(2, seq(100, 8), 12, 0.0, 0)));
  Trace t;
  for (int i = 0; i < 5; ++i) {
    apply(t, engine.step(t.now));
  }
  const StepResult s6 = engine.step(t.now);
  apply(t, s6);
  EXPECT_GT(s6.duration, 0.0);
  EXPECT_EQ(t.preemptions, (std::vector<std::pair<int, RequestId>>{{6, 1}}));
  EXPECT_EQ(s6.stats.num_scheduled_requests, 1U);
  t = run(engine, t);
  EXPECT_EQ(t.finish_order, (std::vector<RequestId>{2, 1}));
  EXPECT_EQ(t.tokens.at(1).size(), 12U);
}

// A preempted request rejoins the waiting queue by priority, not at its front.
TEST(Engine, PriorityPolicyRequeuesAPreemptedRequestByPriority) {
  Engine engine(by_priority(tiny(6, 8, 64)), 1);
  ASSERT_TRUE(engine.add_request(req(1, seq(1, 8), 12, 0.0, 1)));
  ASSERT_TRUE(engine.add_request(req(2, seq(100, 9), 12, 0.0, 0)));
  Trace t;
  for (int i = 0; i < 4; ++i) {
    apply(t, engine.step(t.now));
  }
  ASSERT_TRUE(engine.add_request(req(3, seq(200, 4), 2, 1.0, 0)));  // waits: no block free
  ASSERT_TRUE(engine.add_request(req(4, seq(300, 4), 2, 1.0, 2)));
  apply(t, engine.step(t.now));
  ASSERT_EQ(t.preemptions.size(), 1U);
  EXPECT_EQ(engine.waiting_ids(), (std::vector<RequestId>{3, 1, 4}));
}

TEST(Engine, PrefixHitsPromptAndDecodeBlocks) {
  Engine engine(tiny(100, 8, 64), 1);
  const Tokens a = seq(1000, 20);
  ASSERT_TRUE(engine.add_request(req(1, a, 9)));
  Trace t = run(engine);
  EXPECT_EQ(t.usage.at(1).cached_tokens, 0U);

  // Shares a's first 13 tokens: 3 full blocks of 4 hit.
  Tokens b = seq(1000, 13);
  b.push_back(5);
  b.push_back(6);
  ASSERT_TRUE(engine.add_request(req(2, b, 1)));
  // Exactly a's prompt: every block is cached but the last token is recomputed: (20 - 1) / 4 = 4 blocks.
  ASSERT_TRUE(engine.add_request(req(3, a, 1)));
  // a's prompt + a's reply + more: blocks filled during decode hit too. a computed 20 + 8 = 28 tokens.
  Tokens d = a;
  d.insert(d.end(), t.tokens.at(1).begin(), t.tokens.at(1).end());
  d.push_back(42);
  d.push_back(43);
  ASSERT_TRUE(engine.add_request(req(4, d, 1)));
  // Differs in block 0 only: no hit even though every later block's tokens match a's.
  Tokens e = a;
  e[0] = 7;
  ASSERT_TRUE(engine.add_request(req(5, e, 1)));
  t = run(engine, t);
  EXPECT_EQ(t.usage.at(2).cached_tokens, 12U);
  EXPECT_EQ(t.first_usage.at(2).cached_tokens, 12U);  // known from the first token on
  EXPECT_EQ(t.first_usage.at(4).prompt_tokens, 31U);
  EXPECT_EQ(t.usage.at(3).cached_tokens, 16U);
  EXPECT_EQ(t.usage.at(4).cached_tokens, 28U);
  EXPECT_EQ(t.usage.at(5).cached_tokens, 0U);
  const Metrics m = engine.metrics();
  EXPECT_EQ(m.prefix_cache_queries_total, 20U + 15U + 20U + 31U + 20U);
  EXPECT_EQ(m.prefix_cache_hits_total, 12U + 16U + 28U);
  EXPECT_EQ(engine.cached_prefix_tokens(a), 16U);
}

TEST(Engine, AssumedCachedTokensSkipOnlyTheirPrefill) {
  // 30 tokens, 22 assumed cached on an empty cache: 5 whole blocks of 4 count as hits; their blocks are still
  // taken, and only the other 10 tokens are prefilled.
  Engine engine(tiny(100, 8, 64), 1);
  RequestSpec r = req(1, seq(2000, 30), 2);
  r.assume_cached_tokens = 22;
  ASSERT_TRUE(engine.add_request(std::move(r)));
  const StepResult first = engine.step(0);
  EXPECT_EQ(first.stats.num_prefill_tokens, 10U);
  EXPECT_EQ(engine.metrics().prefix_cache_hits_total, 20U);
  EXPECT_DOUBLE_EQ(engine.metrics().kv_cache_usage, 8.0 / 100.0);  // ceil(30 / 4) blocks held
  Trace t;
  apply(t, first);
  t = run(engine, t);
  EXPECT_EQ(t.usage.at(1).cached_tokens, 20U);
  // The whole prompt assumed: the last token is still computed.
  RequestSpec all = req(2, seq(3000, 12), 1);
  all.assume_cached_tokens = 12;
  ASSERT_TRUE(engine.add_request(std::move(all)));
  t = run(engine, t);
  EXPECT_EQ(t.usage.at(2).cached_tokens, 8U);
}

TEST(Engine, TwoRequestsShareCachedBlocks) {
  Engine engine(tiny(100, 8, 64), 1);
  const Tokens shared = seq(1, 16);
  ASSERT_TRUE(engine.add_request(req(1, shared, 1)));
  run(engine);
  Tokens x = shared;
  x.push_back(500);
  Tokens y = shared;
  y.push_back(600);
  ASSERT_TRUE(engine.add_request(req(2, x, 3)));
  ASSERT_TRUE(engine.add_request(req(3, y, 3)));
  engine.step(0);
  // Both hold the 4 shared blocks (ref count 2) plus one block each for their own 17th token.
  EXPECT_EQ(engine.cache().num_free(), 100U - 6U);
  EXPECT_NEAR(engine.metrics().kv_cache_usage, 0.06, 1e-12);
}

// Hand-simulated (block 4, 6 blocks): A and B, 8-token prompts, 12 tokens each (19 tokens of KV = 5 blocks).
// Steps 1-5 both run (4 blocks after step 1, 6 after step 2). Step 6: A needs a 4th block, none free: B
// (admitted last) is preempted, releasing blocks [2,3,5] in reverse; A takes the head (5, B's third block)
// and at step 10 its 5th block (3, B's second). B (13 tokens, needing 4 blocks) cannot come back while A
// holds 5 of 6, so it returns at step 13 after A finished at step 12, hits its one still-cached block,
// recomputes 9 tokens, and emits indices 5..11 in steps 13..19.
TEST(Engine, PreemptionByRecomputeWhenBlocksRunOut) {
  Engine engine(tiny(6, 8, 64), 1);
  ASSERT_TRUE(engine.add_request(req(1, seq(1, 8), 12)));
  ASSERT_TRUE(engine.add_request(req(2, seq(100, 8), 12)));
  Trace t;
  for (int i = 0; i < 5; ++i) {
    apply(t, engine.step(t.now));
  }
  EXPECT_EQ(engine.cache().num_free(), 0U);
  apply(t, engine.step(t.now));
  ASSERT_EQ(t.preemptions.size(), 1U);
  EXPECT_EQ(t.preemptions[0], (std::pair<int, RequestId>{6, 2}));
  EXPECT_EQ(engine.waiting_ids(), (std::vector<RequestId>{2}));
  EXPECT_EQ(engine.running_ids(), (std::vector<RequestId>{1}));

  t = run(engine, t);
  EXPECT_EQ(t.finish_step.at(1), 12);
  EXPECT_EQ(t.finish_step.at(2), 19);
  EXPECT_EQ(t.tokens.at(2).size(), 12U);
  EXPECT_EQ(t.usage.at(2).cached_tokens, 0U);
  const Metrics m = engine.metrics();
  EXPECT_EQ(m.num_preemptions_total, 1U);
  EXPECT_EQ(m.prefix_cache_queries_total, 16U);  // the re-lookup after preemption is not counted
  EXPECT_EQ(m.generation_tokens_total, 24U);
  EXPECT_EQ(engine.cache().num_free(), 6U);
}

TEST(Engine, PreemptionOutputMatchesAnUnpreemptedRun) {
  // Recompute must not change what a request generates.
  Engine small(tiny(6, 8, 64), 1);
  Engine big(tiny(100, 8, 64), 1);
  for (Engine* e : {&small, &big}) {
    ASSERT_TRUE(e->add_request(req(1, seq(1, 8), 12)));
    ASSERT_TRUE(e->add_request(req(2, seq(100, 8), 12)));
  }
  const Trace a = run(small);
  const Trace b = run(big);
  EXPECT_FALSE(a.preemptions.empty());
  EXPECT_TRUE(b.preemptions.empty());
  EXPECT_EQ(a.tokens, b.tokens);
}

// Block size 4, 10 blocks, 8 tokens per step. A (8-token prompt, 12 tokens out) grows to 5 blocks. B's
// 32-token prompt needs 8 blocks: its first 7-token chunk fits beside A at step 2, its whole prompt does
// not. Current vLLM holds B until A has finished; older vLLM admits it on the first chunk, and when A
// and B together outgrow the cache B (admitted last) is preempted.
TEST(Engine, FullPromptGateHoldsWhatOnlyItsFirstChunkFits) {
  std::map<std::uint32_t, Trace> traces;
  for (const std::uint32_t gate : {1U, 0U}) {
    EngineConfig c = tiny(10, 8, 8);
    c.reserve_full_prompt = gate;
    Engine engine(c, 1);
    ASSERT_TRUE(engine.add_request(req(1, seq(1, 8), 12)));
    ASSERT_TRUE(engine.add_request(req(2, seq(100, 32), 4)));
    traces[gate] = run(engine);
  }
  const Trace& gated = traces.at(1);
  EXPECT_TRUE(gated.preemptions.empty());
  EXPECT_GT(gated.first_token_step.at(2), gated.finish_step.at(1));
  const Trace& chunked = traces.at(0);
  ASSERT_FALSE(chunked.preemptions.empty());
  EXPECT_EQ(chunked.preemptions.front().second, 2U);
  EXPECT_EQ(gated.tokens, chunked.tokens);  // scheduling never changes what is generated
}

// Watermark 0.3 of 10 blocks = 3 blocks kept free while anything runs. B (24 tokens, 6 blocks) would fit
// beside A (2 blocks) but not with the watermark, so it waits for A; an idle engine admits regardless.
TEST(Engine, WatermarkAppliesOnlyWhileSomethingRuns) {
  EngineConfig c = tiny(10, 8, 64);
  c.kv_watermark = 0.3;
  Engine engine(c, 1);
  ASSERT_TRUE(engine.add_request(req(1, seq(1, 8), 4)));
  ASSERT_TRUE(engine.add_request(req(2, seq(100, 24), 4)));
  const Trace t = run(engine);
  EXPECT_EQ(t.first_token_step.at(1), 1);
  EXPECT_GT(t.first_token_step.at(2), t.finish_step.at(1));

  c.kv_watermark = 0;
  Engine plain(c, 1);
  ASSERT_TRUE(plain.add_request(req(1, seq(1, 8), 4)));
  ASSERT_TRUE(plain.add_request(req(2, seq(100, 24), 4)));
  EXPECT_EQ(run(plain).first_token_step.at(2), 1);

  c.kv_watermark = 0.3;
  Engine idle(c, 1);
  ASSERT_TRUE(idle.add_request(req(3, seq(500, 35), 1)));  // 9 of 10 blocks, past the watermark
  EXPECT_EQ(run(idle).first_token_step.at(3), 1);
}

TEST(Engine, ManyRequestsUnderPressureAllComplete) {
  Engine engine(tiny(40, 6, 32), 3);
  for (RequestId id = 1; id <= 30; ++id) {
    ASSERT_TRUE(engine.add_request(req(id, seq(static_cast<TokenId>(id * 1000), 10 + id * 3), 20)));
  }
  const Trace t = run(engine);
  EXPECT_EQ(t.usage.size(), 30U);
  for (const auto& [id, u] : t.usage) {
    EXPECT_EQ(u.completion_tokens, 20U);
  }
  EXPECT_GT(engine.metrics().num_preemptions_total, 0U);
  EXPECT_EQ(engine.cache().num_free(), 40U);
}

TEST(Engine, AbortFreesSlotAndBlocksAtOnce) {
  Engine engine(tiny(20, 1, 64), 1);
  ASSERT_TRUE(engine.add_request(req(1, seq(1, 16), 50)));
  ASSERT_TRUE(engine.add_request(req(2, seq(100, 16), 50)));
  engine.step(0);
  EXPECT_EQ(engine.cache().num_free(), 16U);
  EXPECT_TRUE(engine.abort(2));  // waiting
  EXPECT_TRUE(engine.abort(1));  // running
  EXPECT_FALSE(engine.abort(1));
  EXPECT_FALSE(engine.abort(77));
  EXPECT_EQ(engine.cache().num_free(), 20U);
  EXPECT_FALSE(engine.has_work());
  const Metrics m = engine.metrics();
  EXPECT_EQ(m.num_running, 0U);
  EXPECT_EQ(m.num_waiting, 0U);
  EXPECT_EQ(m.requests_aborted_total, 2U);
  // The id can be reused once aborted, and the aborted prompt's blocks still hit.
  ASSERT_TRUE(engine.add_request(req(1, seq(1, 16), 1)));
  EXPECT_EQ(run(engine).usage.at(1).cached_tokens, 12U);
}

TEST(Engine, AddRequestValidation) {
  EngineConfig c = tiny(10, 4, 64);
  c.max_model_len = 30;
  Engine engine(c, 1);
  EXPECT_FALSE(engine.add_request(req(1, {}, 4)));
  EXPECT_FALSE(engine.add_request(req(1, seq(1, 4), 0)));
  EXPECT_FALSE(engine.add_request(req(1, {kVocabSize}, 4)));
  const auto too_long = engine.add_request(req(1, seq(1, 30), 1));
  ASSERT_FALSE(too_long);
  EXPECT_NE(too_long.error().message.find("maximum model length of 30"), std::string::npos);
  // 10 blocks of 4 = 40 tokens: 28 + 2 - 1 = 29 fits; a bigger cache demand is refused.
  ASSERT_TRUE(engine.add_request(req(1, seq(1, 28), 100)));
  EXPECT_FALSE(engine.add_request(req(1, seq(1, 4), 1)));  // duplicate id
  const Trace t = run(engine);
  EXPECT_EQ(t.usage.at(1).completion_tokens, 2U);  // capped by max_model_len
  c.num_gpu_blocks = 5;
  Engine small(c, 1);
  EXPECT_FALSE(small.add_request(req(1, seq(1, 25), 1)));
}

TEST(Engine, DeterministicForTheSameSeed) {
  auto drive = [](std::uint64_t seed) {
    Engine engine(*find_preset("a4000-qwen3-4b"), seed);
    for (RequestId id = 1; id <= 6; ++id) {
      EXPECT_TRUE(engine.add_request(req(id, seq(static_cast<TokenId>(id * 7), 500 * id), 40)));
    }
    return run(engine);
  };
  const Trace a = drive(5);
  const Trace b = drive(5);
  const Trace c = drive(6);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.durations, b.durations);
  EXPECT_NE(a.tokens, c.tokens);
  // Generated text re-tokenizes to the generated tokens.
  for (const auto& [id, toks] : a.tokens) {
    EXPECT_EQ(tokenize(detokenize(toks)), toks);
  }
}

TEST(Engine, TtftHistogramUsesVllmBuckets) {
  Engine engine(tiny(100, 8, 64), 1);
  ASSERT_TRUE(engine.add_request(req(1, seq(1, 8), 1, 0.0)));
  ASSERT_TRUE(engine.add_request(req(2, seq(100, 8), 1, -1.0)));  // arrived a second before
  run(engine);
  const Histogram& h = engine.metrics().time_to_first_token;
  ASSERT_EQ(h.bounds.size(), 22U);
  EXPECT_DOUBLE_EQ(h.bounds.front(), 0.001);
  EXPECT_DOUBLE_EQ(h.bounds.back(), 2560.0);
  EXPECT_EQ(h.count, 2U);
  EXPECT_EQ(h.buckets[2], 1U);   // le 0.01: the 0.01 s one
  EXPECT_EQ(h.buckets[11], 1U);  // le 1.0: 1.01 s is above
  EXPECT_EQ(h.buckets[12], 2U);  // le 2.5
  EXPECT_NEAR(h.sum, 0.01 + 1.01, 1e-9);
}

}  // namespace
}  // namespace warden::engine

namespace warden::engine {
namespace {

// Random arrivals, aborts and steps on a small cache: invariants hold throughout.
TEST(Engine, RandomWorkloadKeepsInvariants) {
  Engine engine(tiny(24, 5, 24), 11);
  std::uint64_t x = 2024;
  auto rnd = [&](std::uint64_t bound) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (x >> 33U) % bound;
  };
  std::map<RequestId, int> expected;  // live requests -> tokens still to come
  std::map<RequestId, std::uint32_t> next_index;
  Metrics last = engine.metrics();
  double now = 0;
  RequestId next_id = 1;
  for (int op = 0; op < 3000; ++op) {
    const auto choice = rnd(10);
    if (choice < 3) {
      // Prompts share a random-length prefix, so hits, sharing and eviction all happen.
      Tokens prompt = seq(1, 4 + rnd(40));
      prompt.push_back(static_cast<TokenId>(100 + next_id));
      const int max_tokens = 1 + static_cast<int>(rnd(30));
      ASSERT_TRUE(engine.add_request(req(next_id, prompt, max_tokens, now)));
      expected[next_id] = max_tokens;
      next_index[next_id] = 0;
      ++next_id;
    } else if (choice == 3 && !expected.empty()) {
      auto it = expected.begin();
      std::advance(it, static_cast<long>(rnd(expected.size())));
      EXPECT_TRUE(engine.abort(it->first));
      expected.erase(it);
    } else if (engine.has_work()) {
      const StepResult r = engine.step(now);
      EXPECT_GT(r.duration, 0.0);
      now += r.duration;
      for (const auto& e : r.events) {
        if (e.kind != Event::Kind::token) {
          continue;
        }
        ASSERT_TRUE(expected.contains(e.request)) << "event for an aborted or finished request";
        EXPECT_EQ(e.index, next_index[e.request]++);
        const int left = --expected[e.request];
        EXPECT_EQ(e.finished, left == 0);
        if (e.finished) {
          EXPECT_EQ(e.usage.completion_tokens, next_index[e.request]);
          expected.erase(e.request);
        }
      }
    }
    const Metrics m = engine.metrics();
    EXPECT_LE(m.num_running, 5U);
    EXPECT_EQ(m.num_running + m.num_waiting, expected.size());
    EXPECT_GE(m.prefix_cache_queries_total, last.prefix_cache_queries_total);
    EXPECT_GE(m.prefix_cache_hits_total, last.prefix_cache_hits_total);
    EXPECT_LE(m.prefix_cache_hits_total, m.prefix_cache_queries_total);
    EXPECT_GE(m.generation_tokens_total, last.generation_tokens_total);
    EXPECT_GE(m.kv_cache_usage, 0.0);
    EXPECT_LE(m.kv_cache_usage, 1.0);
    last = m;
  }
  while (engine.has_work()) {
    now += engine.step(now).duration;
  }
  EXPECT_EQ(engine.cache().num_free(), 24U);
  EXPECT_GT(engine.metrics().prefix_cache_hits_total, 0U);
  EXPECT_GT(engine.metrics().num_preemptions_total, 0U);
  EXPECT_GT(engine.metrics().requests_aborted_total, 0U);
}

}  // namespace
}  // namespace warden::engine
