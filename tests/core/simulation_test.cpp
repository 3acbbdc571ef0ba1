// A small closed-loop simulation through the Router (Envoy's "simulation test"): sessions take turns,
// requests finish in random order, replicas fail and recover. Invariants are checked at every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/made_router.hpp"
#include "core/router.hpp"

namespace warden::core {
namespace {

using std::chrono::milliseconds;

TEST(Simulation, RouterKeepsItsInvariantsUnderChurnAndFailures) {
  constexpr std::size_t replicas = 4;
  constexpr std::uint64_t sessions = 24;
  RoutingConfig routing;
  routing.max_num_seqs = 32;  // threshold 8
  Router router = made_router(router_config(routing));
  std::vector<ReplicaMetrics> metrics(replicas);
  SplitMixRng rng(11);
  SplitMixRng world(12);
  std::vector<ReplicaIndex> outstanding;  // replica of each request in flight
  std::vector<bool> busy(sessions, false);
  std::vector<std::uint64_t> owner;  // session of each outstanding request
  std::vector<std::uint32_t> live(replicas, 0);
  std::uint64_t next_session_id = 1000;
  std::vector<std::uint64_t> ids(sessions);
  for (std::uint64_t s = 0; s < sessions; ++s) {
    ids[s] = s;
  }
  Time now{0};
  std::uint64_t returning = 0;
  std::uint64_t stayed = 0;
  for (int step = 0; step < 20'000; ++step) {
    now += milliseconds(1 + world.uniform(20));
    const auto action = world.uniform(100);
    if (action < 2) {
      // A replica fails or recovers (keep at least one healthy most of the time).
      const auto r = world.uniform(replicas);
      metrics[r].healthy = !metrics[r].healthy;
      continue;
    }
    if (action < 50 && !outstanding.empty()) {
      const auto i = world.uniform(outstanding.size());
      router.finish(outstanding[i]);
      --live[outstanding[i]];
      busy[owner[i]] = false;
      outstanding.erase(outstanding.begin() + static_cast<std::ptrdiff_t>(i));
      owner.erase(owner.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    const auto s = world.uniform(sessions);
    if (busy[s]) {
      continue;
    }
    if (world.uniform(20) == 0) {
      ids[s] = next_session_id++;  // the session ended; a new one takes its place
    }
    RequestFacts facts;
    facts.session = SessionKey{ids[s]};
    facts.prompt_tokens = static_cast<std::uint32_t>(1000 + world.uniform(9000));
    const auto home = router.home_of(ids[s], now);
    const Decision d = router.route(facts, metrics, now, rng);
    const bool any_healthy =
        std::any_of(metrics.begin(), metrics.end(), [](const auto& m) { return m.healthy; });
    if (!any_healthy) {
      ASSERT_FALSE(d.ok());
      ASSERT_EQ(d.reason, NoReplicaReason::no_healthy_replica);
      continue;
    }
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(metrics[*d.replica].healthy) << "step " << step;
    if (home && metrics[*home].healthy) {
      ++returning;
      if (live[*home] <= 8) {
        ASSERT_EQ(d.replica, home) << "left a home at or below the threshold, step " << step;
        ASSERT_EQ(d.route, Route::sticky);
      }
      stayed += d.replica == home ? 1 : 0;
      ASSERT_EQ(router.home_of(ids[s], now), home) << "a spill must not move the home";
    } else if (home) {
      ASSERT_EQ(d.route, Route::failover);
      ASSERT_EQ(router.home_of(ids[s], now), d.replica);
    } else {
      ASSERT_EQ(d.route, Route::new_conversation);
      ASSERT_EQ(router.home_of(ids[s], now), d.replica);
    }
    ++live[*d.replica];
    busy[s] = true;
    outstanding.push_back(*d.replica);
    owner.push_back(s);
    const RouterView v = router.view(now);
    for (std::size_t r = 0; r < replicas; ++r) {
      ASSERT_EQ(v.counters[r].in_flight, live[r]) << "replica " << r;
    }
  }
  const RouterView v = router.view(now);
  EXPECT_EQ(v.totals.sticky, stayed);
  EXPECT_EQ(v.totals.sticky + v.totals.spilled_in, returning);
  EXPECT_GT(returning, 1000u);
  // 24 sessions on 4 replicas never push a home past 8 in flight often: nearly every returning turn stays.
  EXPECT_GT(static_cast<double>(stayed) / static_cast<double>(returning), 0.95);
}

}  // namespace
}  // namespace warden::core
