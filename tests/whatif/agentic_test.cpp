// The agentic workload in the what-if driver: prompts as the engine would render them, task columns.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "engine/presets.hpp"
#include "report/report.hpp"
#include "whatif/driver.hpp"
#include "whatif/prompt.hpp"
#include "workload/agent_loop.hpp"

namespace warden::whatif {
namespace {

workload::WorkloadConfig agentic_workload() {
  workload::WorkloadConfig w = *workload::preset("agentic");
  w.agentic.subagent_share = 0.6;
  w.agentic.parallel_share = 0.4;
  w.agentic.think_time = 5;
  w.agentic.rounds_mean = 4;
  return w;
}

// Every request's incremental prompt equals the full render of its body: tool blocks, subagents sharing
// slots one after the other, and compactions included.
TEST(WhatifAgentic, IncrementalPromptsEqualTheFullRender) {
  workload::WorkloadConfig c = agentic_workload();
  c.agentic.context_window = 24000;  // compactions within the run
  const workload::Workload w(c);
  workload::AgentLoop loop(w, 2, 0.0, 0);
  std::vector<IncrementalPrompt> prompts(loop.slots());
  double now = 0;
  std::size_t checked = 0;
  for (int step = 0; step < 400; ++step) {
    const auto ready = loop.take_ready(now);
    for (const std::size_t slot : ready) {
      const auto inc = prompts[slot].render(w, loop.conversation(slot));
      const auto full = render_full(w, loop.conversation(slot));
      ASSERT_TRUE(inc && full);
      ASSERT_EQ(*inc, *full) << "slot " << slot << ", request " << checked;
      ++checked;
    }
    for (const std::size_t slot : ready) {
      loop.complete(slot, now + 1, w.synthetic_reply(loop.conversation(slot), 50));
    }
    now = std::max(now + 1, loop.next_ready_at().value_or(now + 1));
  }
  EXPECT_GT(checked, 100U);
  EXPECT_GT(loop.counts().compactions, 0U);
  EXPECT_GT(loop.counts().subagents_started, 0U);
}

SimulationConfig agentic_config() {
  SimulationConfig c;
  c.engine = *engine::find_preset("a4000-qwen3-4b");
  c.replicas = 2;
  c.levels = {3};
  c.duration = 120;
  c.policies = {"vllm-lb", "affinity"};
  c.workload = agentic_workload();
  c.workload.agentic.context_window = c.engine.max_model_len;
  return c;
}

TEST(WhatifAgentic, RowsCarryTaskColumnsAndAreDeterministic) {
  const SimulationConfig c = agentic_config();
  const auto a = simulate(c);
  const auto b = simulate(c);
  ASSERT_TRUE(a) << a.error();
  ASSERT_TRUE(b) << b.error();
  report::Report ra{a->rows, {}};
  report::Report rb{b->rows, {}};
  EXPECT_EQ(report::to_json(ra), report::to_json(rb));
  for (const report::Row& r : a->rows) {
    ASSERT_TRUE(r.tasks_per_hour && r.task_time_p50 && r.task_time_p95) << r.policy;
    EXPECT_GT(*r.tasks_per_hour, 0);
    EXPECT_LE(*r.task_time_p50, *r.task_time_p95);
    // A task is at least one request long, and has think time only between tasks.
    EXPECT_GT(*r.task_time_p50, *r.ttfb_p50);
    EXPECT_EQ(r.errors, 0);
  }
  EXPECT_NE(report::to_terminal(a->rows).find("tasks/h"), std::string::npos);
}

TEST(WhatifAgentic, TheCeilingFindsEachThreadsPreviousRequestCached) {
  SimulationConfig c = agentic_config();
  c.levels = {6};
  c.policies = {"vllm-lb", "ceiling"};
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  ASSERT_EQ(o->rows.size(), 2U);
  const report::Row& balancer = o->rows[0];
  const report::Row& ceiling = o->rows[1];
  // Same placement, but only a task's first request (and a subagent's) can miss.
  EXPECT_GT(ceiling.prefix_hits, balancer.prefix_hits);
  EXPECT_EQ(ceiling.errors, 0);
}

// Past the GPU caches (12 agents on 4 replicas of 2,100 blocks), 8 GiB of host memory per rank for evicted
// prefixes raises the hit rate, and raises it most where each thread's requests go to one replica: the
// balancer scatters them, so each rank's host memory holds stale copies of every thread. Placement alone:
// task admission (which holds task starts while the GPU caches are full) is off.
TEST(WhatifAgentic, CpuOffloadPaysMostWhereAThreadStaysOnItsReplica) {
  SimulationConfig c = agentic_config();
  c.routing.task_admission.enabled = false;
  c.engine.num_gpu_blocks = 2100;
  c.replicas = 4;
  c.levels = {12};
  c.duration = 300;
  const auto hits = [&](double offload_gib) {
    c.engine.kv_offloading_size = offload_gib;
    const auto o = simulate(c);
    EXPECT_TRUE(o) << o.error();
    std::map<std::string, double> by_policy;
    for (const report::Row& r : o->rows) {
      EXPECT_EQ(r.errors, 0) << r.policy;
      by_policy[r.policy] = r.prefix_hits.value_or(-1);
    }
    return by_policy;
  };
  const auto gpu_only = hits(0);
  const auto offload = hits(8);
  EXPECT_GT(offload.at("vllm-lb"), gpu_only.at("vllm-lb"));
  EXPECT_GT(offload.at("affinity"), gpu_only.at("affinity") + 10);
  EXPECT_GT(offload.at("affinity"), offload.at("vllm-lb") + 5);
}

TEST(WhatifAgentic, HeldTaskStartsAreReleasedAndNothingFails) {
  SimulationConfig c = agentic_config();
  c.policies = {"tasks"};
  c.routing.admission.high_water = 0.2;  // every home is short of room: task starts wait for the bound
  c.routing.admission.low_water = 0.2;
  c.routing.admission.max_wait = std::chrono::seconds(5);
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  const LevelStats& level = o->levels.at(0);
  EXPECT_GT(level.held, 0U);
  EXPECT_EQ(level.refused, 0U);
  ASSERT_TRUE(o->rows.at(0).tasks_per_hour);
  EXPECT_GT(*o->rows.at(0).tasks_per_hour, 0);
  EXPECT_EQ(o->rows.at(0).errors, 0);
}

// A subagent is a thread of its own, as the gateway keys it: placed (route new) apart from its main thread
// with threads on; with routing.threads off it is a later turn of its session on the session's home.
TEST(WhatifAgentic, SubagentsArePlacedAsThreadsUnlessThreadsAreOff) {
  SimulationConfig c = agentic_config();
  c.policies = {"affinity"};
  c.routing.rebalance = false;  // no move hides a placement
  const auto new_routes = [](const Outcome& o) {
    return o.levels.at(0).routes[static_cast<std::size_t>(core::Route::new_conversation)];
  };
  const auto on = simulate(c);
  c.routing.threads = false;
  const auto off = simulate(c);
  ASSERT_TRUE(on && off);
  const std::uint64_t sessions = off->levels.at(0).sessions_started;
  EXPECT_EQ(new_routes(*off), sessions);
  EXPECT_GT(new_routes(*on), new_routes(*off));
  EXPECT_GT(on->levels.at(0).routes[static_cast<std::size_t>(core::Route::sticky)], 0U);
}

// Agents that share session ids (AgenticConfig::session_keys): hashing the session id puts every agent of
// one key on one replica and leaves the others idle, and as their contexts grow there the hit rate falls
// from its start (docs/experiments/2026-12-06-seed-fall.md); with an id of its own per session the same
// agents spread and hit more.
TEST(WhatifAgentic, HashingFewSharedKeysCrowdsOneReplicaAndItsHitsFall) {
  SimulationConfig c = agentic_config();
  c.policies = {"session-hash"};
  c.replicas = 3;
  c.levels = {6};
  c.duration = 600;
  c.timeline = 120;
  c.engine.num_gpu_blocks = 3000;
  c.workload.agentic.subagent_share = 0;  // a subagent is a thread of its own, hashed elsewhere
  c.workload.agentic.tasks = 1000;        // agents resume one session: contexts grow all run long
  const auto own = simulate(c);
  c.workload.agentic.session_keys = 1;
  const auto shared = simulate(c);
  ASSERT_TRUE(own && shared);
  const auto used = [](const LevelStats& l) {
    return std::count_if(l.requests_per_replica.begin(), l.requests_per_replica.end(),
                         [](std::uint32_t n) { return n > 0; });
  };
  EXPECT_EQ(used(shared->levels.at(0)), 1);
  EXPECT_GT(used(own->levels.at(0)), 1);
  const auto& timeline = shared->levels.at(0).timeline;
  ASSERT_EQ(timeline.size(), 5U);
  for (std::size_t i = 1; i < timeline.size(); ++i) {
    EXPECT_LT(*timeline[i].prefix_hits, *timeline.front().prefix_hits - 15) << "interval " << i;
  }
  EXPECT_LT(*shared->rows.at(0).prefix_hits, *own->rows.at(0).prefix_hits - 10);
}

// The same agents under the warden's rule: it finds the id shared (their first messages take turns under
// it), keys each agent's conversation by the id and its first message, and spreads them by load; the
// hashing baseline keys by the id as sent and stays on one replica.
TEST(WhatifAgentic, TheWardenTellsApartAgentsThatShareOneSessionId) {
  SimulationConfig c = agentic_config();
  c.replicas = 3;
  c.levels = {6};
  c.duration = 600;
  c.engine.num_gpu_blocks = 3000;
  c.workload.agentic.subagent_share = 0;
  c.workload.agentic.tasks = 1000;
  c.workload.agentic.session_keys = 1;
  c.policies = {"affinity", "session-hash"};
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  const auto used = [](const LevelStats& l) {
    return std::count_if(l.requests_per_replica.begin(), l.requests_per_replica.end(),
                         [](std::uint32_t n) { return n > 0; });
  };
  ASSERT_EQ(o->levels.size(), 2U);
  EXPECT_EQ(used(o->levels.at(0)), 3) << "affinity";
  EXPECT_EQ(used(o->levels.at(1)), 1) << "session-hash";
  EXPECT_GT(*o->rows.at(0).prefix_hits, *o->rows.at(1).prefix_hits + 10);
}

TEST(WhatifAgentic, TheReferenceWorkloadHasNoTaskColumns) {
  SimulationConfig c = agentic_config();
  c.workload = workload::WorkloadConfig{};
  c.duration = 30;
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  for (const report::Row& r : o->rows) {
    EXPECT_FALSE(r.tasks_per_hour || r.task_time_p50 || r.task_time_p95);
  }
  EXPECT_EQ(report::to_terminal(o->rows).find("tasks/h"), std::string::npos);
}

// The timeline splits each level's window into intervals that follow one another, whose tasks add up to
// the level's and whose hit rates are those of the engines' counters in each interval.
TEST(WhatifAgentic, TheTimelineSplitsEachLevelIntoIntervalsThatAddUpToIt) {
  SimulationConfig c = agentic_config();
  c.levels = {3, 4};
  c.duration = 240;
  c.timeline = 60;
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  ASSERT_EQ(o->levels.size(), 4U);
  for (std::size_t l = 0; l < o->levels.size(); ++l) {
    const LevelStats& level = o->levels[l];
    const report::Row& row = o->rows[l];
    ASSERT_EQ(level.timeline.size(), 4U) << level.policy << " " << level.sessions;
    double tasks = 0;
    double previous_end = 0;
    for (const report::TimelinePoint& p : level.timeline) {
      EXPECT_EQ(p.policy, level.policy);
      EXPECT_EQ(p.sessions, level.sessions);
      EXPECT_DOUBLE_EQ(p.from, previous_end);
      EXPECT_NEAR(p.to - p.from, 60.0, 1e-9);
      previous_end = p.to;
      ASSERT_TRUE(p.prefix_hits.has_value()) << p.policy << " " << p.sessions << " from " << p.from;
      ASSERT_TRUE(p.tasks_per_hour.has_value());
      EXPECT_GE(*p.prefix_hits, 0.0);
      EXPECT_LE(*p.prefix_hits, 100.0);
      EXPECT_GT(p.requests, 0U);
      tasks += *p.tasks_per_hour * 60.0 / 3600.0;
    }
    // Tasks that end in the window, give or take one that ends at its very edge.
    EXPECT_NEAR(tasks, *row.tasks_per_hour * c.duration / 3600.0, 1.0 + 1e-9) << level.policy;
    const double level_hits = 100.0 * level.prefix_hits / level.prefix_queries;
    EXPECT_NEAR(*row.prefix_hits, level_hits, 1e-6);
  }
  // A cold start: the first interval of the first level hits less than the level as a whole.
  EXPECT_LT(*o->levels[0].timeline.front().prefix_hits, *o->rows[0].prefix_hits);
  c.timeline = 0;
  const auto none = simulate(c);
  ASSERT_TRUE(none) << none.error();
  for (const LevelStats& level : none->levels) {
    EXPECT_TRUE(level.timeline.empty());
  }
  EXPECT_EQ(report::to_json(report::Report{none->rows, {}, {}}),
            report::to_json(report::Report{o->rows, {}, {}}));
}

TEST(WhatifAgentic, RejectsANegativeTimelineInterval) {
  SimulationConfig c = agentic_config();
  c.timeline = -1;
  EXPECT_FALSE(simulate(c));
}

}  // namespace
}  // namespace warden::whatif
