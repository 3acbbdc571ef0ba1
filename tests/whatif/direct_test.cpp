// Another client beside the warden (SimulationConfig::direct): its agents' requests reach the engines, and
// their caches, but never the warden.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "protocol/kv_events.hpp"
#include "whatif/clients.hpp"
#include "whatif/crowded.hpp"
#include "whatif/direct.hpp"
#include "whatif/driver.hpp"

namespace warden::whatif {
namespace {

// A quarter (or all, or none) of the agents the other client's, the warden listening to the events.
SimulationConfig agents(double direct_share, SimulationConfig::DirectRule rule) {
  SimulationConfig c = crowded();
  c.kv_events = true;
  c.direct = {.share = direct_share, .rule = rule};
  return c;
}

struct Seen {
  std::uint64_t routed = 0;  // decisions that gave a replica
  std::set<std::uint64_t> threads;
};

Result<Outcome> run(const SimulationConfig& c, Seen& seen) {
  Hooks hooks;
  hooks.on_decision = [&](const DecisionTrace& t) {
    if (t.decision.ok()) {
      ++seen.routed;
      seen.threads.insert(t.decision.thread_key);
    }
  };
  return simulate(c, hooks);
}

std::uint64_t dispatched(const LevelStats& l) {
  return std::accumulate(l.requests_per_replica.begin(), l.requests_per_replica.end(), std::uint64_t{0});
}

TEST(WhatifDirect, ADirectShareIsThatShareOfTheAgentsToTheNearestSpreadOverTheirOrder) {
  EXPECT_EQ(direct_agents(26, 0.25), 7U);
  EXPECT_EQ(direct_agents(8, 0.25), 2U);
  EXPECT_EQ(direct_agents(8, 0), 0U);
  EXPECT_EQ(direct_agents(8, 1), 8U);
  const SimulationConfig c = agents(0.25, SimulationConfig::DirectRule::vllm_lb);
  Clients clients(c);
  clients.start_loop(8, 0, 0, false);
  ASSERT_EQ(clients.groups().size(), 2U);
  EXPECT_EQ(clients.groups()[0].name, "warden");
  EXPECT_EQ(clients.groups()[0].agents, 6U);
  EXPECT_FALSE(clients.groups()[0].direct);
  EXPECT_EQ(clients.groups()[1].name, "direct");
  EXPECT_EQ(clients.groups()[1].agents, 2U);
  EXPECT_TRUE(clients.groups()[1].direct);
}

// Every agent the other client's: the engines serve every request, and the warden routes none.
TEST(WhatifDirect, TheOtherClientsRequestsReachTheEnginesButNotTheWarden) {
  for (const auto rule : {SimulationConfig::DirectRule::vllm_lb, SimulationConfig::DirectRule::hash}) {
    Seen seen;
    const auto o = run(agents(1.0, rule), seen);
    ASSERT_TRUE(o) << o.error();
    const LevelStats& l = o->levels.at(0);
    EXPECT_GT(dispatched(l), 50U) << "the engines served them";
    EXPECT_EQ(seen.routed, 0U) << "the warden routed none of them";
    EXPECT_EQ(l.held, 0U);
    EXPECT_EQ(l.routes[static_cast<std::size_t>(core::Route::sticky)], 0U);
    ASSERT_EQ(l.groups.size(), 2U);
    const GroupStats& direct = l.groups[1];
    EXPECT_EQ(direct.agents, 8U);
    EXPECT_GT(direct.tasks, 0U);
    EXPECT_GT(direct.cached_tokens, 0.0) << "they hit the caches they filled";
    EXPECT_NEAR(static_cast<double>(*o->rows.at(0).tasks_per_hour), direct.tasks * 3600.0 / 600, 1e-6);
    EXPECT_EQ(o->rows.at(0).errors, 0);
  }
}

// A quarter of the agents the other client's: the warden routes exactly its own agents' requests (each
// once), the engines serve both, and the other client's task starts are never held at the warden.
TEST(WhatifDirect, TheWardenRoutesOnlyItsOwnAgentsRequests) {
  Seen seen;
  const auto o = run(agents(0.25, SimulationConfig::DirectRule::hash), seen);
  ASSERT_TRUE(o) << o.error();
  const LevelStats& l = o->levels.at(0);
  ASSERT_EQ(l.groups.size(), 2U);
  const GroupStats& warden = l.groups[0];
  const GroupStats& direct = l.groups[1];
  EXPECT_GT(warden.tasks, 0U);
  EXPECT_GT(direct.tasks, 0U);
  EXPECT_GT(dispatched(l), seen.routed) << "the engines served requests the warden never routed";
  EXPECT_GT(seen.routed, 0U);
  EXPECT_TRUE(
      std::all_of(direct.start_waits.begin(), direct.start_waits.end(), [](double w) { return w == 0; }));
  Seen alone;
  const auto all_warden = run(agents(0, SimulationConfig::DirectRule::hash), alone);
  ASSERT_TRUE(all_warden) << all_warden.error();
  EXPECT_LT(seen.threads.size(), alone.threads.size()) << "fewer threads through the warden";
}

// The other client sends session ids of its own: the warden's index names its blocks under keys that are
// none of the warden's thread keys.
TEST(WhatifDirect, TheOtherClientsSessionIdsAreItsOwn) {
  for (const std::uint64_t key : {std::uint64_t{1}, std::uint64_t{0xfedcba9876543210ULL}}) {
    EXPECT_EQ(protocol::kv::session_key(protocol::kv::session_id_of(key)), key);
    EXPECT_NE(protocol::kv::session_key(DirectClient::session_id(key)), key);
    EXPECT_NE(protocol::kv::session_key(DirectClient::session_id(key)), 0U);
  }
}

TEST(WhatifDirect, RejectsAShareOutsideZeroToOneAndTheChatWorkload) {
  SimulationConfig c = agents(1.5, SimulationConfig::DirectRule::vllm_lb);
  EXPECT_FALSE(validate(c));
  c.direct.share = -0.1;
  EXPECT_FALSE(validate(c));
  c.direct.share = 0.25;
  EXPECT_TRUE(validate(c));
  c.workload = *workload::preset("claude-code");
  EXPECT_FALSE(validate(c));
}

}  // namespace
}  // namespace warden::whatif
