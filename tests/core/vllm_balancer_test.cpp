// vLLM's data-parallel balancer model, shared by `lm-warden sim` and `lm-warden simulate`: exact picks over
// hand-made views.
#include "core/vllm_balancer.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "core/rng.hpp"

namespace warden::core {
namespace {

TEST(VllmBalancer, EachServerScansFromItsOwnIndex) {
  VllmBalancer b(4, 0);
  ASSERT_EQ(b.api_servers(), 4U);
  for (std::uint32_t s = 0; s < 4; ++s) {
    EXPECT_EQ(b.start_index(s), s);
  }
  // Idle fleet: ties go to the first rank in each server's scan order.
  EXPECT_EQ(b.route_via(2), 2U);
  EXPECT_EQ(b.route_via(0), 0U);
}

TEST(VllmBalancer, OwnAssignmentsCountAsApiServersWaiting) {
  VllmBalancer b(4, 0);
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

TEST(VllmBalancer, LowestFourWaitingPlusRunning) {
  VllmBalancer b(4, 0);
  const std::vector<RankLoad> loads{{0, 5}, {0, 1}, {1, 0}, {0, 1}};  // scores 5, 1, 4, 1
  b.publish(loads);
  EXPECT_EQ(b.route_via(0), 1U);  // scan 0,1,2,3: first minimum is rank 1
  EXPECT_EQ(b.route_via(3), 3U);  // scan 3,0,1,2: first minimum is rank 3
  EXPECT_EQ(b.route_via(2), 3U);  // scan 2,3,0,1: rank 3
}

TEST(VllmBalancer, FewerServersThanRanksSpreadTheirStarts) {
  VllmBalancer b(4, 2);
  EXPECT_EQ(b.start_index(0), 0U);
  EXPECT_EQ(b.start_index(1), 2U);
}

TEST(VllmBalancer, RandomServerPickSpreadsAnIdleFleet) {
  VllmBalancer b(4, 0);
  SplitMixRng rng(7);
  std::vector<int> seen(4);
  for (int i = 0; i < 400; ++i) {
    const std::vector<RankLoad> idle(4);
    b.publish(idle);
    ++seen[b.route(rng)];
  }
  for (const int n : seen) {
    EXPECT_GT(n, 60);
  }
}

TEST(VllmBalancer, IdleRanksGoToTheScanStartThenOwnAssignmentsSpread) {
  VllmBalancer b(4, 4);  // API server 2 of 4 scans 2, 3, 0, 1
  EXPECT_EQ(b.route_via(2), 2U);
  EXPECT_EQ(b.route_via(2), 3U);  // its own assignment to 2 counts as 4 waiting (score 16)
  EXPECT_EQ(b.route_via(2), 0U);
  EXPECT_EQ(b.route_via(2), 1U);
  EXPECT_EQ(b.route_via(2), 2U);  // all at 16: first in scan order
}

TEST(VllmBalancer, StaleViewUntilThePublish) {
  VllmBalancer b(2, 2);  // two API servers: each pick adds 2 to the local waiting count
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

}  // namespace
}  // namespace warden::core
