// Exact-pick and statistical tests for the policy registry (Envoy style, scripted RNG).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "core/decide.hpp"
#include "core/helpers.hpp"
#include "core/policy.hpp"

namespace warden::core {
namespace {

using testing::idle_snapshot;
using testing::known_conversation;
using testing::new_conversation;
using testing::pinned;
using testing::routed;
using testing::unrouted;
using testing::with_in_flight;

std::unique_ptr<Policy> policy(std::string_view name) {
  auto p = make_policy(name);
  EXPECT_NE(p, nullptr) << name;
  return p;
}

TEST(Registry, AllNamesConstructAndReportTheirName) {
  ASSERT_EQ(policy_names().size(), 5u);
  for (auto name : policy_names()) {
    auto p = make_policy(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->name(), name);
  }
  EXPECT_EQ(make_policy("least-request"), nullptr);
  EXPECT_EQ(make_policy(""), nullptr);
}

TEST(Registry, EveryPolicyHonoursPinsAndReportsBadOnes) {
  for (auto name : policy_names()) {
    auto p = policy(name);
    ScriptedRng rng;
    Snapshot s = with_in_flight({0, 40, 0});
    s.replicas[1].healthy = false;
    EXPECT_EQ(p->pick(s, pinned(1), rng), routed(1, Route::pinned)) << name;
    EXPECT_EQ(p->pick(s, pinned(3), rng), unrouted(Route::pinned, NoReplicaReason::pin_out_of_range)) << name;
  }
}

TEST(Registry, EveryPolicySaysWhenNothingIsHealthy) {
  for (auto name : policy_names()) {
    auto p = policy(name);
    ScriptedRng rng;
    Snapshot s = idle_snapshot(3);
    for (auto& r : s.replicas) {
      r.healthy = false;
    }
    const Decision d = p->pick(s, new_conversation(), rng);
    EXPECT_FALSE(d.ok()) << name;
    EXPECT_EQ(d.reason, NoReplicaReason::no_healthy_replica) << name;
    EXPECT_EQ(p->pick(idle_snapshot(0), new_conversation(), rng).reason, NoReplicaReason::no_replicas)
        << name;
  }
}

TEST(AffinityPolicy, IsDecide) {
  auto p = policy("affinity");
  ScriptedRng rng;
  const Snapshot s = with_in_flight({9, 1, 0});
  EXPECT_EQ(p->pick(s, known_conversation(0), rng), routed(2, Route::spilled));
  EXPECT_EQ(p->pick(s, known_conversation(1), rng), routed(1, Route::sticky));
}

TEST(VllmLbPolicy, BalancesEvenWhenSnapshotSaysAffinityOn) {
  auto p = policy("vllm-lb");
  ScriptedRng rng;
  Snapshot s = idle_snapshot(3);
  ASSERT_TRUE(s.routing.affinity);
  s.replicas[0].running = 2;
  s.replicas[2].waiting = 1;
  s.replicas[1].running = 3;
  EXPECT_EQ(p->pick(s, known_conversation(0), rng), routed(2, Route::balanced));  // 1 waiting scores 1
  s.routing.vllm_balancer = VllmBalancerModel::legacy;
  EXPECT_EQ(p->pick(s, known_conversation(0), rng), routed(0, Route::balanced));  // 4 * 1 > 2
}

TEST(RoundRobinPolicy, CyclesAndSkipsUnhealthy) {
  auto p = policy("round-robin");
  ScriptedRng rng;
  Snapshot s = with_in_flight({30, 0, 0, 0});
  s.replicas[2].healthy = false;
  std::vector<ReplicaIndex> picks;
  for (int i = 0; i < 6; ++i) {
    const Decision d = p->pick(s, new_conversation(), rng);
    ASSERT_EQ(d.route, Route::balanced);
    picks.push_back(*d.replica);
  }
  EXPECT_EQ(picks, (std::vector<ReplicaIndex>{0, 1, 3, 0, 1, 3}));
  EXPECT_EQ(rng.calls(), 0u);
}

TEST(SessionHashPolicy, SameKeySameReplicaWhateverTheLoad) {
  auto p = policy("session-hash");
  ScriptedRng rng;
  const Snapshot idle = idle_snapshot(4);
  const ReplicaIndex first = *p->pick(idle, new_conversation(7), rng).replica;
  Snapshot busy = idle;
  busy.replicas[first].in_flight = 32;
  busy.replicas[first].kv_usage = 1.0;
  EXPECT_EQ(p->pick(busy, new_conversation(7), rng), routed(first, Route::new_conversation));
  EXPECT_EQ(p->pick(busy, known_conversation(first, 7), rng), routed(first, Route::sticky));
}

TEST(SessionHashPolicy, SkipsForwardOverUnhealthyAndReportsFailover) {
  auto p = policy("session-hash");
  ScriptedRng rng;
  Snapshot s = idle_snapshot(4);
  const ReplicaIndex first = *p->pick(s, new_conversation(11), rng).replica;
  s.replicas[first].healthy = false;
  const ReplicaIndex next = (first + 1) % 4;
  EXPECT_EQ(p->pick(s, known_conversation(first, 11), rng), routed(next, Route::failover));
  s.replicas[next].healthy = false;
  EXPECT_EQ(p->pick(s, new_conversation(11), rng), routed((first + 2) % 4, Route::new_conversation));
}

TEST(SessionHashPolicy, NoSessionKeyIsRandomAmongHealthy) {
  auto p = policy("session-hash");
  Snapshot s = idle_snapshot(3);
  s.replicas[0].healthy = false;
  ScriptedRng rng({1});
  EXPECT_EQ(p->pick(s, RequestFacts{}, rng), routed(2, Route::new_conversation));
  EXPECT_EQ(rng.bounds_asked(), std::vector<std::uint64_t>{2});
}

// chwbl: find the key's first choice on an idle fleet, then load it around the bound.
class ChwblTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Snapshot idle = idle_snapshot(4);
    first_ = *chwbl_->pick(idle, new_conversation(key_), rng_).replica;
  }
  // Others at 4 in flight each, the first choice at `x`: capacity = ceil(1.25 * (12 + x + 1) / 4).
  Snapshot loaded(std::uint32_t x) const {
    Snapshot s = idle_snapshot(4);
    for (auto& r : s.replicas) {
      r.in_flight = 4;
    }
    s.replicas[first_].in_flight = x;
    return s;
  }
  std::unique_ptr<Policy> chwbl_ = make_policy("chwbl");
  ScriptedRng rng_;
  std::uint64_t key_ = 0xABCDEF;
  ReplicaIndex first_ = 0;
};

TEST_F(ChwblTest, StableFirstChoiceWhileUnderTheBound) {
  // x = 5: capacity ceil(1.25 * 18 / 4) = 6 and 5 + 1 <= 6.
  EXPECT_EQ(chwbl_->pick(loaded(5), known_conversation(first_, key_), rng_), routed(first_, Route::sticky));
}

TEST_F(ChwblTest, WalksOnWhenOverTheBoundAndCallsItASpill) {
  // x = 6: capacity ceil(1.25 * 19 / 4) = 6 and 6 + 1 > 6.
  const Decision d = chwbl_->pick(loaded(6), known_conversation(first_, key_), rng_);
  ASSERT_TRUE(d.ok());
  EXPECT_NE(*d.replica, first_);
  EXPECT_EQ(d.route, Route::spilled);
}

TEST_F(ChwblTest, RingDoesNotDependOnLoadOfOthers) {
  Snapshot s = loaded(0);
  EXPECT_EQ(chwbl_->pick(s, new_conversation(key_), rng_), routed(first_, Route::new_conversation));
}

TEST_F(ChwblTest, UnhealthyFirstChoiceFailsOver) {
  Snapshot s = idle_snapshot(4);
  s.replicas[first_].healthy = false;
  const Decision d = chwbl_->pick(s, known_conversation(first_, key_), rng_);
  ASSERT_TRUE(d.ok());
  EXPECT_NE(*d.replica, first_);
  EXPECT_EQ(d.route, Route::failover);
}

// --- statistics -----------------------------------------------------------------------------------------

TEST(Statistics, NewSessionsSpreadEvenlyOverIdleReplicas) {
  // Idle fleet: every pick is a tie broken by the RNG. Chi-square over 8 replicas (7 degrees of freedom):
  // the 0.1% critical value is 24.32.
  constexpr std::size_t replicas = 8;
  constexpr int draws = 80'000;
  const Snapshot s = idle_snapshot(replicas);
  SplitMixRng rng(2026);
  std::array<int, replicas> counts{};
  for (int i = 0; i < draws; ++i) {
    ++counts[*decide(s, new_conversation(static_cast<std::uint64_t>(i)), rng).replica];
  }
  const double expected = static_cast<double>(draws) / replicas;
  double chi2 = 0.0;
  for (int c : counts) {
    chi2 += (c - expected) * (c - expected) / expected;
  }
  EXPECT_LT(chi2, 24.32);
}

// Places `sessions` conversations one by one, each staying in flight (a loaded fleet), and returns the load.
std::vector<std::uint32_t> place_all(Policy& p, std::size_t replicas, std::size_t sessions, Rng& rng,
                                     Rng& keys) {
  Snapshot s = idle_snapshot(replicas);
  for (std::size_t i = 0; i < sessions; ++i) {
    const Decision d = p.pick(s, new_conversation(keys.uniform(~0ULL)), rng);
    ++s.replicas[*d.replica].in_flight;
    ++s.replicas[*d.replica].active_conversations;
    ++s.replicas[*d.replica].sent_since_scrape;
  }
  std::vector<std::uint32_t> load;
  for (const auto& r : s.replicas) {
    load.push_back(r.in_flight);
  }
  return load;
}

TEST(Statistics, AffinityPlacesConcurrentSessionsExactlyEvenly) {
  auto p = policy("affinity");
  SplitMixRng rng(1);
  SplitMixRng keys(2);
  const auto load = place_all(*p, 8, 64, rng, keys);
  EXPECT_EQ(*std::min_element(load.begin(), load.end()), 8u);
  EXPECT_EQ(*std::max_element(load.begin(), load.end()), 8u);
}

TEST(Statistics, SessionHashImbalanceShowsUnderLoad) {
  // 16 concurrent sessions on 8 replicas, 200 trials: hashing is blind to load, so replicas often sit idle
  // while others carry three or more sessions; the warden's placement never does.
  auto hash = policy("session-hash");
  auto affinity = policy("affinity");
  SplitMixRng rng(3);
  SplitMixRng keys(4);
  int hash_unbalanced = 0;
  int affinity_unbalanced = 0;
  double hash_spread = 0.0;
  constexpr int trials = 200;
  for (int t = 0; t < trials; ++t) {
    const auto h = place_all(*hash, 8, 16, rng, keys);
    const auto a = place_all(*affinity, 8, 16, rng, keys);
    const auto [hmin, hmax] = std::minmax_element(h.begin(), h.end());
    const auto [amin, amax] = std::minmax_element(a.begin(), a.end());
    hash_unbalanced += (*hmin == 0 && *hmax >= 3) ? 1 : 0;
    affinity_unbalanced += (*amax - *amin > 0) ? 1 : 0;
    hash_spread += *hmax - *hmin;
  }
  EXPECT_EQ(affinity_unbalanced, 0);
  EXPECT_GT(hash_unbalanced, trials / 2);
  EXPECT_GT(hash_spread / trials, 2.0);
}

TEST(Statistics, ChwblKeepsEveryReplicaWithinTheBound) {
  auto p = policy("chwbl");
  SplitMixRng rng(5);
  SplitMixRng keys(6);
  for (int t = 0; t < 50; ++t) {
    const auto load = place_all(*p, 8, 64, rng, keys);
    // After m placements no replica exceeds ceil(1.25 * m / n) = 10.
    EXPECT_LE(*std::max_element(load.begin(), load.end()), 10u);
  }
}

TEST(Statistics, LoadOnlyPoliciesSpreadConcurrentRequestsEvenly) {
  // round-robin by turn; vllm-lb because it counts what it sent since the last scrape.
  for (auto name : {"round-robin", "vllm-lb"}) {
    auto p = policy(name);
    SplitMixRng rng(7);
    SplitMixRng keys(8);
    const auto load = place_all(*p, 4, 40, rng, keys);
    EXPECT_EQ(load, (std::vector<std::uint32_t>{10, 10, 10, 10})) << name;
  }
}

}  // namespace
}  // namespace warden::core
