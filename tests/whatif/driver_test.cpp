#include "whatif/driver.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "engine/presets.hpp"
#include "report/report.hpp"

namespace warden::whatif {
namespace {

SimulationConfig small_config() {
  SimulationConfig c;
  c.engine = *engine::find_preset("a4000-qwen3-4b");
  c.replicas = 4;
  c.levels = {4};
  c.duration = 60;
  c.policies = {"affinity"};
  return c;
}

const report::Row& row_of(const Outcome& o, std::string_view policy, int sessions) {
  for (const auto& r : o.rows) {
    if (r.policy == policy && r.sessions == sessions) {
      return r;
    }
  }
  throw std::runtime_error("row missing");
}

std::string as_json(const Outcome& o) {
  report::Report rep;
  rep.rows = o.rows;
  return report::to_json(rep);
}

TEST(WhatifDriver, SameSeedGivesByteIdenticalRows) {
  SimulationConfig c = small_config();
  c.levels = {4, 8};
  c.policies = {"vllm-lb", "affinity"};
  c.warm_start = true;
  c.workload.think_time = 2;
  const auto a = simulate(c);
  const auto b = simulate(c);
  ASSERT_TRUE(a) << a.error();
  ASSERT_TRUE(b) << b.error();
  EXPECT_EQ(as_json(*a), as_json(*b));
  EXPECT_EQ(a->engine_steps, b->engine_steps);
  EXPECT_EQ(a->model_seconds, b->model_seconds);
}

TEST(WhatifDriver, DifferentSeedsDiffer) {
  SimulationConfig c = small_config();
  c.policies = {"vllm-lb"};
  c.workload.think_time = 2;
  const auto a = simulate(c);
  c.seed = 2;
  c.workload.seed = 2;
  const auto b = simulate(c);
  ASSERT_TRUE(a && b);
  EXPECT_NE(as_json(*a), as_json(*b));
}

TEST(WhatifDriver, HoldsNSessionsAtAllTimes) {
  SimulationConfig c = small_config();
  c.levels = {6};
  c.duration = 90;
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  const LevelStats& s = o->levels.at(0);
  // Without think time every session always has its turn in flight.
  EXPECT_EQ(s.max_in_flight, 6U);
  EXPECT_EQ(s.min_live_sessions, 6U);
  EXPECT_EQ(s.max_live_sessions, 6U);
  // Finished sessions were replaced (6 turns of ~9 s each fit more than once in 90 s).
  EXPECT_GT(s.sessions_started, 6U);
  EXPECT_GT(s.requests, 6U * 5);
}

TEST(WhatifDriver, AffinityKeepsEveryConversationHomeWithHeadroom) {
  SimulationConfig c = small_config();
  c.levels = {4, 8};
  c.workload.think_time = 1;
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  for (const auto& level : o->levels) {
    EXPECT_EQ(level.routes[static_cast<std::size_t>(core::Route::spilled)], 0U) << level.sessions;
    EXPECT_GT(level.routes[static_cast<std::size_t>(core::Route::sticky)], 0U);
  }
  EXPECT_EQ(row_of(*o, "affinity", 4).stayed_on_replica, 100.0);
  EXPECT_EQ(row_of(*o, "affinity", 8).stayed_on_replica, 100.0);
}

TEST(WhatifDriver, VllmBalancerHitsLessThanAffinityAtFourSessions) {
  SimulationConfig c = small_config();
  c.duration = 120;
  c.workload.think_time = 3;
  c.policies = {"vllm-lb", "affinity"};
  const auto o = simulate(c);  // cold engines for each policy: neither inherits the other's cache
  ASSERT_TRUE(o) << o.error();
  const auto off = row_of(*o, "vllm-lb", 4).prefix_hits.value();
  const auto on = row_of(*o, "affinity", 4).prefix_hits.value();
  EXPECT_LT(off + 10, on);
  // vLLM's balancer has no home replica: the stayed column does not apply.
  EXPECT_FALSE(row_of(*o, "vllm-lb", 4).stayed_on_replica.has_value());
}

TEST(WhatifDriver, RouterDecidesOnTheLastScrapeNotOnLiveState) {
  SimulationConfig c = small_config();
  c.levels = {8};
  c.duration = 40;
  c.scrape_interval = 1.0;
  c.workload.think_time = 0.5;
  std::vector<std::pair<double, std::vector<core::ReplicaMetrics>>> scrapes;
  std::size_t decisions = 0;
  std::size_t stale = 0;
  Hooks hooks;
  hooks.on_scrape = [&](double t, std::span<const core::ReplicaMetrics> m) {
    scrapes.emplace_back(t, std::vector<core::ReplicaMetrics>(m.begin(), m.end()));
  };
  hooks.on_decision = [&](const DecisionTrace& d) {
    ASSERT_FALSE(scrapes.empty());
    const auto& last = scrapes.back();
    ASSERT_LE(last.first, d.time);
    ASSERT_EQ(d.snapshot.replicas.size(), last.second.size());
    for (std::size_t r = 0; r < last.second.size(); ++r) {
      EXPECT_EQ(d.snapshot.replicas[r].running, last.second[r].running);
      EXPECT_EQ(d.snapshot.replicas[r].waiting, last.second[r].waiting);
      EXPECT_DOUBLE_EQ(d.snapshot.replicas[r].kv_usage, last.second[r].kv_usage);
      if (d.live[r].running != last.second[r].running || d.live[r].waiting != last.second[r].waiting) {
        ++stale;
      }
    }
    ++decisions;
  };
  const auto o = simulate(c, hooks);
  ASSERT_TRUE(o) << o.error();
  EXPECT_GT(decisions, 20U);
  EXPECT_GT(stale, 0U);  // the engines moved on since the scrape the decision used
  // Scrapes come every scrape_interval of model time.
  for (std::size_t i = 1; i < scrapes.size(); ++i) {
    EXPECT_NEAR(scrapes[i].first - scrapes[i - 1].first, 1.0, 1e-9);
  }
}

TEST(WhatifDriver, ScrapeIntervalChangesWhatTheRouterSees) {
  SimulationConfig c = small_config();
  c.levels = {8};
  c.duration = 40;
  c.workload.think_time = 0.5;
  c.think_jitter = 2.0;  // sessions drift apart, so decisions also happen while others are running
  std::vector<double> kv_seen_fast;
  std::vector<double> kv_seen_slow;
  Hooks hooks;
  hooks.on_decision = [&](const DecisionTrace& d) {
    kv_seen_fast.push_back(d.snapshot.replicas[0].kv_usage);
  };
  c.scrape_interval = 0.5;
  ASSERT_TRUE(simulate(c, hooks));
  hooks.on_decision = [&](const DecisionTrace& d) {
    kv_seen_slow.push_back(d.snapshot.replicas[0].kv_usage);
  };
  c.scrape_interval = 1000;  // one scrape at the start: the router never sees load
  ASSERT_TRUE(simulate(c, hooks));
  for (const double kv : kv_seen_slow) {
    EXPECT_EQ(kv, 0.0);
  }
  EXPECT_TRUE(std::any_of(kv_seen_fast.begin(), kv_seen_fast.end(), [](double kv) { return kv > 0; }));
}

TEST(WhatifDriver, CompareReplaysTheSamePromptsOnWarmEngines) {
  SimulationConfig c = small_config();
  c.levels = {4};
  c.duration = 60;
  c.workload.think_time = 1;
  c.policies = {"affinity", "affinity"};
  c.warm_start = true;
  const auto warm = simulate(c);
  c.warm_start = false;
  const auto cold = simulate(c);
  ASSERT_TRUE(warm && cold);
  // The second pass replays the first pass's conversations: on warm engines their first turns hit.
  EXPECT_GT(warm->levels[1].prefix_hits, cold->levels[1].prefix_hits);
}

// --carry-over: the second level goes on with the first level's sessions (no drain between them) and adds
// new ones. Six turns of 256 tokens take longer than one 40 s window at these loads (the decode alone is
// over 34 ms a token), so fresh sessions finish none in the second level; carried ones started 40 s
// earlier do.
TEST(WhatifDriver, CarryOverRunsTheSessionsOnIntoTheNextLevel) {
  SimulationConfig c = small_config();
  c.levels = {4, 8};
  c.duration = 40;
  const auto fresh = simulate(c);
  c.carry_over = true;
  const auto carried = simulate(c);
  ASSERT_TRUE(fresh) << fresh.error();
  ASSERT_TRUE(carried) << carried.error();
  EXPECT_EQ(fresh->rows.at(1).sessions_per_hour.value_or(-1), 0.0);
  EXPECT_GT(carried->rows.at(1).sessions_per_hour.value_or(0), 0.0);
  const LevelStats& first = carried->levels.at(0);
  const LevelStats& second = carried->levels.at(1);
  EXPECT_EQ(first.drained, first.end);  // no drain: the window's end is the next level's start
  EXPECT_EQ(second.begin, first.end);
  EXPECT_GT(second.drained, second.end);   // the last level drains
  EXPECT_EQ(first.sessions_started, 4U);   // no session finished in the first window
  EXPECT_GE(second.sessions_started, 4U);  // the four added, plus replacements of the carried ones
  EXPECT_EQ(second.max_live_sessions, 8U);
  EXPECT_EQ(fresh->rows.at(0).sessions_per_hour, carried->rows.at(0).sessions_per_hour);
}

TEST(WhatifDriver, CarryOverNeedsLevelsThatDoNotShrinkAndTheChatWorkload) {
  SimulationConfig c = small_config();
  c.carry_over = true;
  c.levels = {8, 4};
  const auto shrinking = simulate(c);
  ASSERT_FALSE(shrinking);
  EXPECT_NE(shrinking.error().find("must not shrink"), std::string::npos);
  c.levels = {4, 8};
  c.workload = *workload::preset("agentic");
  EXPECT_FALSE(simulate(c));
}

TEST(WhatifDriver, RejectsBadConfigs) {
  SimulationConfig c = small_config();
  c.policies = {"nope"};
  EXPECT_FALSE(simulate(c));
  c = small_config();
  c.levels = {};
  EXPECT_FALSE(simulate(c));
  c = small_config();
  c.duration = 0;
  EXPECT_FALSE(simulate(c));
  c = small_config();
  c.engine.num_gpu_blocks = 0;
  EXPECT_FALSE(simulate(c));
}

TEST(WhatifDriver, EveryPolicyRuns) {
  SimulationConfig c = small_config();
  c.levels = {8};
  c.duration = 30;
  c.policies = simulate_policy_names();
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  EXPECT_EQ(o->rows.size(), c.policies.size());
  for (const auto& r : o->rows) {
    EXPECT_GT(r.output_tokens_per_min.value_or(0), 0) << r.policy;
    EXPECT_EQ(r.errors.value_or(-1), 0) << r.policy;
  }
}

}  // namespace
}  // namespace warden::whatif
