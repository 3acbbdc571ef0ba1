// Exact-pick tests for every rule of decide(), with a scripted RNG.
#include <gtest/gtest.h>

#include "core/decide.hpp"
#include "core/helpers.hpp"

namespace warden::core {
namespace {

using testing::idle_snapshot;
using testing::known_conversation;
using testing::new_conversation;
using testing::pinned;
using testing::routed;
using testing::unrouted;
using testing::with_in_flight;

TEST(Decide, NoReplicasConfigured) {
  ScriptedRng rng;
  const Snapshot s = idle_snapshot(0);
  EXPECT_EQ(decide(s, new_conversation(), rng),
            unrouted(Route::new_conversation, NoReplicaReason::no_replicas));
  EXPECT_EQ(decide(s, pinned(0), rng), unrouted(Route::pinned, NoReplicaReason::no_replicas));
}

TEST(Decide, PinIsHonouredWithoutConsultingLoadOrRng) {
  ScriptedRng rng;
  Snapshot s = with_in_flight({0, 30, 0});
  EXPECT_EQ(decide(s, pinned(1), rng), routed(1, Route::pinned));
  // Over a known conversation's home, and with affinity off.
  EXPECT_EQ(decide(s, pinned(1, 2), rng), routed(1, Route::pinned));
  s.routing.affinity = false;
  EXPECT_EQ(decide(s, pinned(1), rng), routed(1, Route::pinned));
  EXPECT_EQ(rng.calls(), 0u);
}

TEST(Decide, PinToUnhealthyReplicaIsStillHonoured) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(3);
  s.replicas[2].healthy = false;
  EXPECT_EQ(decide(s, pinned(2), rng), routed(2, Route::pinned));
  for (auto& r : s.replicas) {
    r.healthy = false;
  }
  EXPECT_EQ(decide(s, pinned(0), rng), routed(0, Route::pinned));
}

TEST(Decide, PinOutOfRangeIsReportedNotRedirected) {
  ScriptedRng rng;
  const Snapshot s = idle_snapshot(4);
  EXPECT_EQ(decide(s, pinned(4), rng), unrouted(Route::pinned, NoReplicaReason::pin_out_of_range));
  EXPECT_EQ(decide(s, pinned(0xFFFFFFFFu), rng), unrouted(Route::pinned, NoReplicaReason::pin_out_of_range));
}

TEST(Decide, NoHealthyReplica) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(2);
  s.replicas[0].healthy = false;
  s.replicas[1].healthy = false;
  EXPECT_EQ(decide(s, new_conversation(), rng),
            unrouted(Route::new_conversation, NoReplicaReason::no_healthy_replica));
  EXPECT_EQ(decide(s, known_conversation(1), rng),
            unrouted(Route::failover, NoReplicaReason::no_healthy_replica));
  s.routing.affinity = false;
  EXPECT_EQ(decide(s, new_conversation(), rng),
            unrouted(Route::balanced, NoReplicaReason::no_healthy_replica));
}

TEST(Decide, AffinityOffCurrentScoreIsLoadFlooredByInFlight) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(3);
  s.routing.affinity = false;
  ASSERT_EQ(s.routing.vllm_balancer, VllmBalancerModel::current);
  s.replicas[0].waiting = 1;  // max(0, 1 + 0) = 1
  s.replicas[1].running = 3;  // 3
  s.replicas[2].running = 2;
  s.replicas[2].sent_since_scrape = 2;  // counted as waiting: 4
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(0, Route::balanced));
  s.replicas[0].in_flight = 5;  // the warden's own requests there: max(5, 1) = 5
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(1, Route::balanced));
  EXPECT_EQ(rng.calls(), 0u);
}

TEST(Decide, AffinityOffCurrentScorePenalisesWaitingOnAFullCache) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(2);
  s.routing.affinity = false;
  s.replicas[0].waiting = 1;
  s.replicas[0].kv_usage = 0.5;  // no penalty yet: 1
  s.replicas[1].running = 3;     // 3
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(0, Route::balanced));
  s.replicas[0].kv_usage = 0.9;  // 1 + 1 * 6 * 0.4 = 3.4
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(1, Route::balanced));
}

TEST(Decide, AffinityOffLegacyScoreWaitingWeighsFour) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(3);
  s.routing.affinity = false;
  s.routing.vllm_balancer = VllmBalancerModel::legacy;
  s.replicas[0].waiting = 1;  // 4
  s.replicas[1].running = 3;  // 3
  s.replicas[2].running = 2;
  s.replicas[2].sent_since_scrape = 2;  // 4
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(1, Route::balanced));
  // A known conversation's home does not matter with affinity off.
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(1, Route::balanced));
  EXPECT_EQ(rng.calls(), 0u);
}

TEST(Decide, AffinityOffLegacyIgnoresWardenInFlightAndKv) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(2);
  s.routing.affinity = false;
  s.routing.vllm_balancer = VllmBalancerModel::legacy;
  s.replicas[0].in_flight = 20;
  s.replicas[0].kv_usage = 0.9;
  s.replicas[1].running = 1;
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(0, Route::balanced));
}

TEST(Decide, AffinityOffTiesBrokenByRngAmongTiedOnly) {
  Snapshot s = idle_snapshot(4);
  s.routing.affinity = false;
  s.replicas[1].running = 1;
  ScriptedRng rng({2});  // third of the tied replicas {0, 2, 3}
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(3, Route::balanced));
  EXPECT_EQ(rng.bounds_asked(), std::vector<std::uint64_t>{3});
}

TEST(Decide, AffinityOffSkipsUnhealthyEvenIfIdlest) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(2);
  s.routing.affinity = false;
  s.replicas[0].healthy = false;
  s.replicas[1].waiting = 10;
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(1, Route::balanced));
}

TEST(Decide, StickyAtHomeUpToAndIncludingTheThreshold) {
  ScriptedRng rng;
  Snapshot s = with_in_flight({8, 0, 0, 0});
  ASSERT_EQ(s.spill_threshold(), 8u);
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(0, Route::sticky));
  EXPECT_EQ(rng.calls(), 0u);
}

TEST(Decide, SpillsAboveTheThresholdToLeastLoadedOther) {
  ScriptedRng rng;
  Snapshot s = with_in_flight({9, 3, 1, 2});
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(2, Route::spilled));
}

TEST(Decide, SpillTargetUsesKvUsageToo) {
  ScriptedRng rng;
  Snapshot s = with_in_flight({9, 1, 1});
  s.replicas[1].kv_usage = 0.8;
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(2, Route::spilled));
}

TEST(Decide, SpillTargetTiesBrokenByRng) {
  Snapshot s = with_in_flight({9, 0, 0, 0});
  ScriptedRng rng({1});
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(2, Route::spilled));
  EXPECT_EQ(rng.bounds_asked(), std::vector<std::uint64_t>{3});
}

TEST(Decide, NoSpillToAReplicaAtLeastAsLoadedAsHome) {
  ScriptedRng rng;
  Snapshot s = with_in_flight({9, 9, 12});
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(0, Route::sticky));
  const Snapshot alone = with_in_flight({20});
  EXPECT_EQ(decide(alone, known_conversation(0), rng), routed(0, Route::sticky));
}

TEST(Decide, SpillNeverTargetsUnhealthy) {
  ScriptedRng rng;
  Snapshot s = with_in_flight({9, 0, 4});
  s.replicas[1].healthy = false;
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(2, Route::spilled));
}

TEST(Decide, FixedSpillThresholdApplies) {
  ScriptedRng rng;
  Snapshot s = with_in_flight({5, 0});
  s.routing.spill_threshold = SpillThreshold{4};
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(1, Route::spilled));
  s.replicas[0].in_flight = 4;
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(0, Route::sticky));
}

TEST(Decide, FailoverWhenHomeUnhealthyReHomesToLeastPlacementScore) {
  ScriptedRng rng;
  Snapshot s = with_in_flight({0, 2, 1});
  s.replicas[0].healthy = false;
  EXPECT_EQ(decide(s, known_conversation(0), rng), routed(2, Route::failover));
}

TEST(Decide, FailoverWhenHomeNoLongerExists) {
  ScriptedRng rng;
  const Snapshot s = with_in_flight({3, 1});
  EXPECT_EQ(decide(s, known_conversation(5), rng), routed(1, Route::failover));
}

TEST(Decide, NewConversationGoesToLowestPlacementScore) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(4);
  s.replicas[0].in_flight = 1;
  s.replicas[1].kv_usage = 0.5;
  s.replicas[2].active_conversations = 1;
  s.replicas[3].in_flight = 0;
  s.replicas[3].kv_usage = 0.01;
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(3, Route::new_conversation));
}

TEST(Decide, NewConversationAvoidsReplicaHoldingManyIdleConversations) {
  // Replica 0 has nothing in flight right now but holds 4 conversations between turns: they come back.
  ScriptedRng rng;
  Snapshot s = idle_snapshot(2);
  s.replicas[0].active_conversations = 4;
  s.replicas[1].in_flight = 2;
  s.replicas[1].active_conversations = 1;
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(1, Route::new_conversation));
}

TEST(Decide, NewConversationWeighsHeldTokensAgainstKvCapacity) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(2);
  for (auto& r : s.replicas) {
    r.active_conversations = 2;
    r.kv_capacity_tokens = 40'000;
  }
  s.replicas[0].held_tokens = 30'000;  // two long conversations: working set near capacity
  s.replicas[1].held_tokens = 4'000;
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(1, Route::new_conversation));
}

TEST(Decide, NewConversationTiesOnIdleReplicasBrokenByRng) {
  const Snapshot s = idle_snapshot(4);
  for (std::uint64_t k = 0; k < 4; ++k) {
    ScriptedRng rng({k});
    EXPECT_EQ(decide(s, new_conversation(), rng),
              routed(static_cast<ReplicaIndex>(k), Route::new_conversation));
    EXPECT_EQ(rng.bounds_asked(), std::vector<std::uint64_t>{4});
  }
}

TEST(Decide, NewConversationSkipsUnhealthy) {
  ScriptedRng rng;
  Snapshot s = with_in_flight({0, 5});
  s.replicas[0].healthy = false;
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(1, Route::new_conversation));
}

TEST(Decide, RequestWithoutSessionIsPlacedLikeANewConversation) {
  ScriptedRng rng;
  const Snapshot s = with_in_flight({2, 1, 3});
  RequestFacts facts;
  EXPECT_EQ(decide(s, facts, rng), routed(1, Route::new_conversation));
}

TEST(Scores, PlacementScoreFormula) {
  ReplicaState r;
  r.in_flight = 8;
  r.kv_usage = 0.25;
  r.active_conversations = 4;
  EXPECT_DOUBLE_EQ(placement_score(r, 32), 12.0 / 32 + 0.25);
  // With the KV capacity known, memory pressure is the larger of KV usage and working set / capacity.
  r.kv_capacity_tokens = 40'000;
  r.held_tokens = 4'000;
  EXPECT_DOUBLE_EQ(placement_score(r, 32), 12.0 / 32 + 0.25);
  r.held_tokens = 20'000;
  EXPECT_DOUBLE_EQ(placement_score(r, 32), 12.0 / 32 + 0.5);
  r.kv_usage = 7.0;  // out of range input is clamped
  EXPECT_DOUBLE_EQ(placement_score(r, 32), 12.0 / 32 + 1.0);
  EXPECT_DOUBLE_EQ(load_score(r, 32), 0.25 + 1.0);
  EXPECT_DOUBLE_EQ(load_score(r, 0), 8.0 + 1.0);
}

TEST(Decide, NewConversationPrefersSmallWorkingSetOverMomentaryKvUsage) {
  // Replica 0 is mid-prefill (KV usage spikes) but holds little; replica 1 is idle this instant but its
  // conversations' contexts already overflow its cache. The long-lived conversation belongs on 0.
  ScriptedRng rng;
  Snapshot s = idle_snapshot(2);
  for (auto& r : s.replicas) {
    r.kv_capacity_tokens = 34'000;
  }
  s.replicas[0].kv_usage = 0.3;
  s.replicas[0].active_conversations = 2;
  s.replicas[0].held_tokens = 16'000;
  s.replicas[1].active_conversations = 5;
  s.replicas[1].held_tokens = 50'000;
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(0, Route::new_conversation));
}

TEST(Scores, VllmScore) {
  ReplicaState r;
  r.waiting = 2;
  r.running = 3;
  r.sent_since_scrape = 1;
  EXPECT_DOUBLE_EQ(vllm_lb_score(r, VllmBalancerModel::legacy), 12.0);  // 4 * 2 + 3 + 1
  EXPECT_DOUBLE_EQ(vllm_lb_score(r), 6.0);                              // (2 + 1) + 3
  r.in_flight = 4;
  r.kv_usage = 0.7;
  EXPECT_DOUBLE_EQ(vllm_lb_score(r), 6.0 + 3 * 6 * 0.2);
  r.in_flight = 9;
  EXPECT_DOUBLE_EQ(vllm_lb_score(r), 9.0 + 3 * 6 * 0.2);
  r.kv_usage = 1.5;  // clamped to 1
  EXPECT_DOUBLE_EQ(vllm_lb_score(r), 9.0 + 3 * 6 * 0.5);
}

}  // namespace
}  // namespace warden::core
