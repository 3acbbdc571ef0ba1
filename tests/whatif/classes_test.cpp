// Classes of work and tenants in the what-if driver: interactive sessions beside headless agents, tenants
// of unequal fleets, each group's figures, and held streams kept alive past task admission's max_wait.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <vector>

#include "engine/presets.hpp"
#include "whatif/clients.hpp"
#include "whatif/crowded.hpp"
#include "whatif/driver.hpp"

namespace warden::whatif {
namespace {

double longest(const std::vector<double>& waits) {
  return waits.empty() ? 0.0 : *std::max_element(waits.begin(), waits.end());
}

std::size_t held(const std::vector<double>& waits) {
  return static_cast<std::size_t>(std::count_if(waits.begin(), waits.end(), [](double w) { return w > 0; }));
}

// A person's task start is never held while the headless ones are (task admission lets it over the room),
// and the interactive sessions run beside the level's headless agents.
TEST(WhatifClasses, AnInteractiveTaskStartIsNeverHeldWhileHeadlessOnesAre) {
  SimulationConfig c = crowded();
  c.workload.agentic.interactive = 2;
  c.workload.agentic.interactive_think_time = 20;
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  const LevelStats& l = o->levels.at(0);
  ASSERT_EQ(l.groups.size(), 2U);
  const GroupStats& headless = l.groups[0];
  const GroupStats& interactive = l.groups[1];
  EXPECT_EQ(headless.name, "headless");
  EXPECT_EQ(headless.agents, 8U);
  EXPECT_EQ(interactive.name, "interactive");
  EXPECT_EQ(interactive.agents, 2U);
  EXPECT_GT(held(headless.start_waits), 0U) << "past the caches: headless starts wait";
  EXPECT_GT(interactive.start_waits.size(), 2U);
  EXPECT_EQ(held(interactive.start_waits), 0U);
  EXPECT_GT(interactive.tasks, 0U);
  ASSERT_TRUE(o->rows.at(0).tasks_per_hour);
  EXPECT_NEAR(*o->rows.at(0).tasks_per_hour,
              static_cast<double>(headless.tasks + interactive.tasks) * 3600.0 / c.duration, 1e-6)
      << "the groups' tasks are the level's";
  EXPECT_EQ(o->rows.at(0).errors, 0);
}

// Before classes of work (classes off) the same sessions say headless and are held like the rest.
TEST(WhatifClasses, WithoutClassesAnInteractiveStartIsHeldLikeTheRest) {
  SimulationConfig c = crowded();
  c.workload.agentic.interactive = 2;
  c.workload.agentic.interactive_think_time = 20;
  c.workload.agentic.think_time = 0;  // the headless agents keep their starts coming
  c.classes = false;
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  const GroupStats& interactive = o->levels.at(0).groups.at(1);
  EXPECT_EQ(interactive.name, "interactive");
  EXPECT_GT(held(interactive.start_waits), 0U);
  EXPECT_EQ(interactive.start_ttfbs.size(), interactive.start_waits.size());
}

// Under task admission alone only a new task's start may be held: a subagent's first request (a thread of
// a task under way, with no home yet) never waits behind held starts, as the gateway routes it at once.
TEST(WhatifClasses, OnlyTaskStartsWaitBehindHeldStarts) {
  SimulationConfig c = crowded();
  c.tenants = {1};  // one group: each start's wait
  c.workload.agentic.subagent_share = 1;
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  const LevelStats& l = o->levels.at(0);
  ASSERT_GT(held(l.groups.at(0).start_waits), 0U) << "past the caches: starts wait";
  EXPECT_EQ(l.held, held(l.groups.at(0).start_waits)) << "every request held is a task's start";
}

TEST(WhatifClasses, EachTenantsFiguresAddUpToTheLevels) {
  SimulationConfig c = crowded();
  c.tenants = {2, 1};
  for (const bool fair : {true, false}) {
    c.fair_shares = fair;
    const auto o = simulate(c);
    ASSERT_TRUE(o) << o.error();
    const LevelStats& l = o->levels.at(0);
    ASSERT_EQ(l.groups.size(), 2U);
    EXPECT_EQ(l.groups[0].agents, 5U);
    EXPECT_EQ(l.groups[1].agents, 3U);
    EXPECT_EQ(l.groups[1].name, "tenant 2");
    const std::uint64_t tasks = l.groups[0].tasks + l.groups[1].tasks;
    EXPECT_NEAR(*o->rows.at(0).tasks_per_hour, static_cast<double>(tasks) * 3600.0 / c.duration, 1e-6);
  }
}

// Held streams kept alive: a start is held past task admission's max_wait, up to its stream bound; with
// them cut (keep_alive off) never beyond max_wait.
TEST(WhatifClasses, AStartKeptAliveIsHeldPastMaxWaitAndOneCutIsNot) {
  SimulationConfig c = crowded();
  c.tenants = {1};  // one group: each start's wait
  c.routing.task_admission.max_wait = std::chrono::seconds(5);
  c.routing.task_admission.stream_max_wait = std::chrono::seconds(60);
  c.keep_alive = false;
  const auto cut = simulate(c);
  ASSERT_TRUE(cut) << cut.error();
  const std::vector<double>& cut_waits = cut->levels.at(0).groups.at(0).start_waits;
  EXPECT_GT(held(cut_waits), 0U);
  // Let in at the first routing past its bound: a finish or a scrape (every scrape_interval) after it.
  EXPECT_LE(longest(cut_waits), 5.0 + c.scrape_interval);
  c.keep_alive = true;
  const auto kept = simulate(c);
  ASSERT_TRUE(kept) << kept.error();
  const std::vector<double>& kept_waits = kept->levels.at(0).groups.at(0).start_waits;
  EXPECT_GT(longest(kept_waits), 5.0 + c.scrape_interval);
  EXPECT_LE(longest(kept_waits), 60.0 + c.scrape_interval);
}

TEST(WhatifClasses, TenantsAndInteractiveSessionsNeedTheAgenticWorkload) {
  SimulationConfig c = crowded();
  c.workload = *workload::preset("claude-code");
  c.tenants = {1, 1};
  EXPECT_FALSE(validate(c));
  c = crowded();
  c.tenants = {3, 0};
  EXPECT_FALSE(validate(c));
}

TEST(WhatifClasses, WithoutGroupsTheLevelHasNone) {
  SimulationConfig c = crowded();
  c.duration = 60;
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  EXPECT_TRUE(o->levels.at(0).groups.empty());
}

}  // namespace
}  // namespace warden::whatif
