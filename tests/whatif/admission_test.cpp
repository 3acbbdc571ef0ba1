// Policy `admission` in the what-if driver: requests held by the Router wait in the driver's FIFO and are
// admitted later, within max_wait; beyond max_queue they fail as the gateway's 503 would.
#include <gtest/gtest.h>

#include "engine/presets.hpp"
#include "whatif/driver.hpp"

namespace warden::whatif {
namespace {

using namespace std::chrono_literals;

// Two replicas of 1,000 blocks (16,000 tokens): one ~11k-token first turn fits per replica, not two.
SimulationConfig crowded(int sessions) {
  SimulationConfig c;
  c.engine = *engine::find_preset("a4000-qwen3-4b");
  c.engine.num_gpu_blocks = 1000;
  c.replicas = 2;
  c.levels = {sessions};
  c.duration = 60;
  c.policies = {"admission"};
  c.workload.think_time = 2;
  c.routing.admission.max_wait = 20s;
  return c;
}

std::uint64_t routed(const LevelStats& l) {
  std::uint64_t n = 0;
  for (const std::uint64_t count : l.routes) {
    n += count;
  }
  return n;
}

TEST(WhatifAdmission, HoldsNewConversationsAndAdmitsThemLater) {
  const auto o = simulate(crowded(4));
  ASSERT_TRUE(o) << o.error();
  const LevelStats& l = o->levels.at(0);
  EXPECT_GE(l.held, 2u);
  EXPECT_GT(l.held_seconds, 0.0);
  EXPECT_EQ(l.refused, 0u);
  // Every request, held or not, reached a replica once: nothing lost, nothing routed twice.
  EXPECT_EQ(routed(l), l.requests);
  EXPECT_EQ(o->rows.at(0).errors.value_or(-1), 0);
  // No wait beyond the bound (plus the nanosecond the driver adds).
  EXPECT_LE(l.held_seconds / static_cast<double>(l.held), 20.0 + 1e-6);
}

TEST(WhatifAdmission, OnlyPolicyAdmissionHolds) {
  SimulationConfig c = crowded(4);
  c.policies = {"affinity"};
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  EXPECT_EQ(o->levels.at(0).held, 0u);
}

TEST(WhatifAdmission, AFullQueueRefuses) {
  SimulationConfig c = crowded(8);
  c.routing.admission.max_queue = 1;
  const auto o = simulate(c);
  ASSERT_TRUE(o) << o.error();
  EXPECT_GT(o->levels.at(0).refused, 0u);
  EXPECT_GT(o->rows.at(0).errors.value_or(0), 0);
}

TEST(WhatifAdmission, SameSeedSameOutcome) {
  const auto a = simulate(crowded(4));
  const auto b = simulate(crowded(4));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->rows, b->rows);
  EXPECT_EQ(a->levels.at(0).held_seconds, b->levels.at(0).held_seconds);
}

TEST(WhatifAdmission, RejectsCrossedWaterMarks) {
  SimulationConfig c = crowded(4);
  c.routing.admission.low_water = 1.2;
  c.routing.admission.high_water = 1.0;
  EXPECT_FALSE(validate(c));
}

// The water marks follow the rule the config file's reader applies (settings/routing.hpp), not one of
// simulate's own: above 0 and at most 100.
TEST(WhatifAdmission, RejectsWaterMarksTheFileRefuses) {
  SimulationConfig c = crowded(4);
  c.routing.admission.high_water = 150;
  const auto v = validate(c);
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().find("routing.admission.high_water must be a number above 0 and at most 100"),
            std::string::npos)
      << v.error();
  c.routing.admission.high_water = 100;
  EXPECT_TRUE(validate(c));
}

}  // namespace
}  // namespace warden::whatif
