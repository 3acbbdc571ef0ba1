// vLLM's data-parallel balancer model, shared by `lm-warden sim` and `lm-warden simulate`: exact picks over
// hand-made views, for the current vLLM balancer and the legacy one (4 * waiting + running, fixed start).
#include "core/vllm_balancer.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "core/decide.hpp"
#include "core/rng.hpp"

namespace warden::core {
namespace {

constexpr VllmBalancerModel legacy = VllmBalancerModel::legacy;
constexpr VllmBalancerModel current = VllmBalancerModel::current;

TEST(VllmBalancerLegacy, EachServerScansFromItsOwnIndex) {
  VllmBalancer b(4, 0, legacy);
  ASSERT_EQ(b.api_servers(), 4U);
  for (std::uint32_t s = 0; s < 4; ++s) {
    EXPECT_EQ(b.start_index(s), s);
  }
  // Idle fleet: ties go to the first rank in each server's scan order.
  EXPECT_EQ(b.route_via(2), 2U);
  EXPECT_EQ(b.route_via(0), 0U);
}

TEST(VllmBalancerLegacy, OwnAssignmentsCountAsApiServersWaiting) {
  VllmBalancer b(4, 0, legacy);
  EXPECT_EQ(b.route_via(1), 1U);
  EXPECT_EQ(b.view(1)[1].waiting, 4U);  // client_count added to its local copy
  EXPECT_EQ(b.view(0)[1].waiting, 0U);  // other servers do not see it until the next publish
  EXPECT_EQ(b.route_via(1), 2U);
  EXPECT_EQ(b.route_via(1), 3U);
  EXPECT_EQ(b.route_via(1), 0U);
  EXPECT_EQ(b.route_via(1), 1U);  // all at 4 waiting now: back to the start
  const std::vector<RankLoad> idle(4);
  b.publish(idle);  // the coordinator's publish replaces the local copy
  EXPECT_EQ(b.view(1)[1].waiting, 0U);
}

TEST(VllmBalancerLegacy, LowestFourWaitingPlusRunning) {
  VllmBalancer b(4, 0, legacy);
  const std::vector<RankLoad> loads{{0, 5}, {0, 1}, {1, 0}, {0, 1}};  // scores 5, 1, 4, 1
  b.publish(loads);
  EXPECT_EQ(b.route_via(0), 1U);  // scan 0,1,2,3: first minimum is rank 1
  EXPECT_EQ(b.route_via(3), 3U);  // scan 3,0,1,2: first minimum is rank 3
  EXPECT_EQ(b.route_via(2), 3U);  // scan 2,3,0,1: rank 3
}

TEST(VllmBalancerLegacy, FewerServersThanRanksSpreadTheirStarts) {
  VllmBalancer b(4, 2, legacy);
  EXPECT_EQ(b.start_index(0), 0U);
  EXPECT_EQ(b.start_index(1), 2U);
}

TEST(VllmBalancerLegacy, RandomServerPickSpreadsAnIdleFleet) {
  VllmBalancer b(4, 0, legacy);
  SplitMixRng rng(7);
  std::vector<int> seen(4);
  for (int i = 0; i < 400; ++i) {
    const std::vector<RankLoad> idle(4);
    b.publish(idle);
    ++seen[b.route(rng).rank];
  }
  for (const int n : seen) {
    EXPECT_GT(n, 60);
  }
}

TEST(VllmBalancerLegacy, IdleRanksGoToTheScanStartThenOwnAssignmentsSpread) {
  VllmBalancer b(4, 4, legacy);  // API server 2 of 4 scans 2, 3, 0, 1
  EXPECT_EQ(b.route_via(2), 2U);
  EXPECT_EQ(b.route_via(2), 3U);  // its own assignment to 2 counts as 4 waiting (score 16)
  EXPECT_EQ(b.route_via(2), 0U);
  EXPECT_EQ(b.route_via(2), 1U);
  EXPECT_EQ(b.route_via(2), 2U);  // all at 16: first in scan order
}

TEST(VllmBalancerLegacy, StaleViewUntilThePublish) {
  VllmBalancer b(2, 2, legacy);  // two API servers: each pick adds 2 to the local waiting count
  const std::vector<RankLoad> idle(2);
  b.publish(idle);
  EXPECT_EQ(b.route_via(0), 0U);
  EXPECT_EQ(b.route_via(0), 1U);  // rank 1's real load below is not seen before the next publish
  EXPECT_EQ(b.view(0)[0].waiting, 2U);
  EXPECT_EQ(b.view(0)[1].waiting, 2U);
  const std::vector<RankLoad> loaded{{0, 0}, {10, 10}};
  b.publish(loaded);  // local adjustments dropped, rank 1 now loaded
  EXPECT_EQ(b.route_via(0), 0U);
  EXPECT_EQ(b.route_via(1), 0U);  // server 1 scans 1, 0: rank 1 scores 50
}

TEST(VllmBalancerScore, CurrentAndLegacyExactValues) {
  // max(8, 2 + 3) + 2 * 6 * (0.8 - 0.5) = 8 + 3.6
  EXPECT_DOUBLE_EQ(vllm_lb_score(current, VllmLbLoad{2, 3, 8, 0.8}), 11.6);
  EXPECT_DOUBLE_EQ(vllm_lb_score(legacy, VllmLbLoad{2, 3, 8, 0.8}), 11.0);
  // The published counts win over a lower in-flight floor; no penalty at or below half-full KV.
  EXPECT_DOUBLE_EQ(vllm_lb_score(current, VllmLbLoad{2, 3, 1, 0.5}), 5.0);
  // No waiting requests: no penalty, however full the cache.
  EXPECT_DOUBLE_EQ(vllm_lb_score(current, VllmLbLoad{0, 3, 0, 1.0}), 3.0);
  // A full cache makes each waiting request weigh 3 more.
  EXPECT_DOUBLE_EQ(vllm_lb_score(current, VllmLbLoad{1, 0, 0, 1.0}), 4.0);
}

TEST(VllmBalancerCurrent, ScanStartRotatesByOneAfterEveryPick) {
  VllmBalancer b(4, 2, current);  // server 1 starts at rank 2
  EXPECT_EQ(b.start_index(1), 2U);
  EXPECT_EQ(b.route_via(1), 2U);
  EXPECT_EQ(b.start_index(1), 3U);
  b.finish(1, 2);
  const std::vector<RankLoad> idle(4);
  b.publish(idle);  // everything idle again: a tie everywhere goes to the new start
  EXPECT_EQ(b.route_via(1), 3U);
  b.finish(1, 3);
  b.publish(idle);
  EXPECT_EQ(b.route_via(1), 0U);
  EXPECT_EQ(b.start_index(1), 1U);
  EXPECT_EQ(b.start_index(0), 0U);  // each server rotates its own start
}

TEST(VllmBalancerLegacy, ScanStartStaysAfterPicks) {
  VllmBalancer b(4, 2, legacy);
  const std::vector<RankLoad> idle(4);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b.route_via(1), 2U);
    b.publish(idle);
  }
  EXPECT_EQ(b.start_index(1), 2U);
}

TEST(VllmBalancerCurrent, OwnInFlightFloorSurvivesThePublish) {
  const std::vector<RankLoad> loads{{0, 0}, {0, 1}};  // rank 1 runs one request of another server
  for (const VllmBalancerModel model : {current, legacy}) {
    VllmBalancer b(2, 2, model);
    EXPECT_EQ(b.route_via(0), 0U);
    EXPECT_EQ(b.in_flight(0)[0], 1U);
    b.publish(loads);  // the engine has not reported our request yet
    // current: rank 0 scores max(2 servers x 1 in flight, 0) = 2, rank 1 scores 1; legacy sees 0 vs 1.
    EXPECT_EQ(b.route_via(0), model == current ? 1U : 0U);
  }
  VllmBalancer b(2, 2, current);
  EXPECT_EQ(b.route_via(0), 0U);
  b.finish(0, 0);
  EXPECT_EQ(b.in_flight(0)[0], 0U);
  b.publish(loads);
  b.route_via(1);  // the other server's pick does not touch server 0's counts
  EXPECT_EQ(b.in_flight(0)[1], 0U);
  EXPECT_EQ(b.start_index(0), 1U);
  b.publish(loads);
  EXPECT_EQ(b.route_via(0), 0U);  // scan 1, 0: rank 1 scores 1, rank 0 now 0
}

TEST(VllmBalancerCurrent, WaitingOnAFullCacheIsPenalised) {
  // Rank 0: one waiting request; rank 1: three running. Server 0 of 1 scans 0, 1.
  VllmBalancer half(2, 1, current);
  const std::vector<RankLoad> half_full{{1, 0, 0.5}, {0, 3, 0.9}};
  half.publish(half_full);
  EXPECT_EQ(half.route_via(0), 0U);  // 1 < 3
  VllmBalancer full(2, 1, current);
  const std::vector<RankLoad> nearly_full{{1, 0, 0.9}, {0, 3, 0.9}};
  full.publish(nearly_full);
  EXPECT_EQ(full.route_via(0), 1U);  // 1 + 1 * 6 * 0.4 = 3.4 > 3
  VllmBalancer old(2, 1, legacy);
  old.publish(half_full);
  EXPECT_EQ(old.route_via(0), 1U);  // 4 * 1 > 3
}

TEST(VllmBalancerCurrent, LocalWaitingCountsInThePenalty) {
  VllmBalancer b(2, 1, current);
  const std::vector<RankLoad> loads{{0, 2, 1.0}, {0, 3, 1.0}};
  b.publish(loads);
  EXPECT_EQ(b.route_via(0), 0U);  // 2 < 3
  // Rank 0 now has 1 local waiting: max(1, 1 + 2) + 1 * 6 * 0.5 = 6 against 3; scan 1, 0.
  EXPECT_EQ(b.view(0)[0].waiting, 1U);
  EXPECT_EQ(b.route_via(0), 1U);
}

TEST(VllmBalancerCurrent, FinishIsPerServerAndNeverBelowZero) {
  VllmBalancer b(2, 2, current);
  const BalancerPick pick{1, b.route_via(1)};
  EXPECT_EQ(b.in_flight(1)[pick.rank], 1U);
  b.finish(0, pick.rank);  // another server's finish: not ours
  EXPECT_EQ(b.in_flight(1)[pick.rank], 1U);
  b.finish(1, pick.rank);
  b.finish(1, pick.rank);
  EXPECT_EQ(b.in_flight(1)[pick.rank], 0U);
}

TEST(VllmBalancerCurrent, RouteReportsTheServerThatPicked) {
  VllmBalancer b(4, 0, current);
  SplitMixRng rng(3);
  for (int i = 0; i < 20; ++i) {
    const BalancerPick pick = b.route(rng);
    ASSERT_LT(pick.server, 4U);
    EXPECT_GE(b.in_flight(pick.server)[pick.rank], 1U);
    b.finish(pick.server, pick.rank);
    EXPECT_EQ(b.in_flight(pick.server)[pick.rank], 0U);
  }
}

}  // namespace
}  // namespace warden::core
