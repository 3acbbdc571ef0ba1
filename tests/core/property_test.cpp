// Property tests over random snapshots (deterministic PRNG): the invariants every decision must keep.
#include <gtest/gtest.h>

#include "core/decide.hpp"
#include "core/helpers.hpp"
#include "core/policy.hpp"
#include "core/rebalance.hpp"

namespace warden::core {
namespace {

struct Case {
  Snapshot snapshot;
  RequestFacts facts;
};

Case random_case(SplitMixRng& g) {
  Case c;
  const std::size_t n = g.uniform(9);  // 0..8 replicas
  RoutingConfig& config = c.snapshot.routing;
  config.max_num_seqs = static_cast<std::uint32_t>(1 + g.uniform(64));
  config.affinity = g.uniform(4) != 0;
  config.rebalance = g.uniform(4) != 0;
  if (g.uniform(2) == 0) {
    config.spill_threshold = SpillThreshold{static_cast<std::uint32_t>(1 + g.uniform(16))};
  }
  c.snapshot.replicas.resize(n);
  for (auto& r : c.snapshot.replicas) {
    r.healthy = g.uniform(5) != 0;
    r.in_flight = static_cast<std::uint32_t>(g.uniform(3) == 0 ? g.uniform(40) : g.uniform(10));
    r.sent_since_scrape = static_cast<std::uint32_t>(g.uniform(4));
    r.running = static_cast<std::uint32_t>(g.uniform(33));
    r.waiting = static_cast<std::uint32_t>(g.uniform(10));
    r.kv_usage = g.unit();
    r.active_conversations = static_cast<std::uint32_t>(g.uniform(20));
    r.held_tokens = g.uniform(200'000);
    r.kv_capacity_tokens = g.uniform(2) == 0 ? 0 : 1 + g.uniform(300'000);
  }
  if (g.uniform(3) != 0) {
    c.facts.session = SessionKey{g.next()};
    if (g.uniform(3) != 0) {
      c.facts.home = static_cast<ReplicaIndex>(g.uniform(n + 2));  // sometimes out of range
      if (g.uniform(2) == 0) {
        c.facts.home_computed_since = g.uniform(400'000);
      }
    }
  }
  if (g.uniform(6) == 0) {
    c.facts.pin = static_cast<ReplicaIndex>(g.uniform(n + 2));
  }
  return c;
}

constexpr int iterations = 20'000;

TEST(Properties, InvariantsHoldForEveryPolicy) {
  for (auto name : policy_names()) {
    auto policy = make_policy(name);
    SplitMixRng g(0xFEED);
    SplitMixRng rng(0xBEEF);
    for (int i = 0; i < iterations; ++i) {
      const Case c = random_case(g);
      const Snapshot& s = c.snapshot;
      const Decision d = policy->pick(s, c.facts, rng);
      const std::size_t n = s.replicas.size();
      SCOPED_TRACE(::testing::Message() << name << " case " << i);
      if (c.facts.pin) {
        // A pin is always honoured (or reported when out of range), never redirected.
        if (*c.facts.pin < n) {
          ASSERT_EQ(d, testing::routed(*c.facts.pin, Route::pinned));
        } else {
          ASSERT_FALSE(d.ok());
          ASSERT_EQ(d.reason, n == 0 ? NoReplicaReason::no_replicas : NoReplicaReason::pin_out_of_range);
        }
        continue;
      }
      if (healthy_count(s) == 0) {
        ASSERT_FALSE(d.ok());
        ASSERT_EQ(d.reason, n == 0 ? NoReplicaReason::no_replicas : NoReplicaReason::no_healthy_replica);
        continue;
      }
      ASSERT_TRUE(d.ok());
      ASSERT_LT(*d.replica, n);
      ASSERT_TRUE(s.replicas[*d.replica].healthy) << "unhealthy replica chosen";
      ASSERT_NE(d.route, Route::pinned);
    }
  }
}

TEST(Properties, AConversationLeavesAHealthyHomeOnlyByRebalanceOrAboveTheThreshold) {
  SplitMixRng g(0x5EED);
  SplitMixRng rng(1);
  int checked = 0;
  int moved = 0;
  for (int i = 0; i < iterations; ++i) {
    const Case c = random_case(g);
    const Snapshot& s = c.snapshot;
    const Decision d = decide(s, c.facts, rng);
    if (c.facts.pin || !s.routing.affinity || !c.facts.home || *c.facts.home >= s.replicas.size()) {
      continue;
    }
    const ReplicaState& home = s.replicas[*c.facts.home];
    if (!home.healthy) {
      ASSERT_EQ(d.route, Route::failover);
      continue;
    }
    if (d.route == Route::rehomed) {
      // A move off an overloaded home goes to a healthy replica with fewer requests in flight.
      ASSERT_TRUE(s.routing.rebalance);
      ASSERT_NE(*d.replica, *c.facts.home);
      ASSERT_TRUE(s.replicas[*d.replica].healthy);
      ASSERT_LT(live_requests(s.replicas[*d.replica]), live_requests(home));
      ++moved;
      continue;
    }
    if (home.in_flight <= s.spill_threshold()) {
      ASSERT_EQ(d, testing::routed(*c.facts.home, Route::sticky));
      ++checked;
    } else if (d.route == Route::spilled) {
      // A spill goes somewhere strictly less loaded.
      ASSERT_LT(load_score(s.replicas[*d.replica], s.max_num_seqs()), load_score(home, s.max_num_seqs()));
    } else {
      ASSERT_EQ(d, testing::routed(*c.facts.home, Route::sticky));
    }
  }
  EXPECT_GT(checked, 1000);  // the generator does exercise the rule
  EXPECT_GT(moved, 0);
}

TEST(Properties, NewConversationsGoToAMinimalPlacementScore) {
  SplitMixRng g(0xC0DE);
  SplitMixRng rng(2);
  for (int i = 0; i < iterations; ++i) {
    Case c = random_case(g);
    c.facts.home.reset();
    c.facts.pin.reset();
    c.snapshot.routing.affinity = true;
    const Decision d = decide(c.snapshot, c.facts, rng);
    if (!d.ok()) {
      continue;
    }
    const double chosen = placement_score(c.snapshot.replicas[*d.replica], c.snapshot.max_num_seqs());
    for (const auto& r : c.snapshot.replicas) {
      if (r.healthy) {
        ASSERT_LE(chosen, placement_score(r, c.snapshot.max_num_seqs()) + 1e-9);
      }
    }
  }
}

TEST(Properties, DecideIsDeterministicGivenTheRng) {
  SplitMixRng g(0xD00D);
  for (int i = 0; i < 2'000; ++i) {
    const Case c = random_case(g);
    SplitMixRng a(static_cast<std::uint64_t>(i));
    SplitMixRng b(static_cast<std::uint64_t>(i));
    ASSERT_EQ(decide(c.snapshot, c.facts, a), decide(c.snapshot, c.facts, b));
  }
}

}  // namespace
}  // namespace warden::core
