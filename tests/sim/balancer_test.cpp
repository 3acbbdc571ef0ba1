// The vLLM balancer model: exact picks over hand-made views.

#include <gtest/gtest.h>

#include <vector>

#include "sim/balancer.hpp"

using warden::sim::Balancer;
using warden::sim::RankLoad;

TEST(SimBalancer, IdleRanksGoToTheScanStartThenOwnAssignmentsSpread) {
  std::vector<RankLoad> live(4);
  auto read = [&](int r) { return live[static_cast<std::size_t>(r)]; };
  Balancer b(4, 2, 4);  // API server 2 of 4: scans 2, 3, 0, 1
  EXPECT_EQ(b.pick(0.0, read), 2);
  EXPECT_EQ(b.pick(0.01, read), 3);  // its own assignment to 2 counts as 4 waiting (score 16)
  EXPECT_EQ(b.pick(0.02, read), 0);
  EXPECT_EQ(b.pick(0.03, read), 1);
  EXPECT_EQ(b.pick(0.04, read), 2);  // all at 16: first in scan order
}

TEST(SimBalancer, FewerApiServersThanRanksSpreadTheirScanStarts) {
  std::vector<RankLoad> live(4);
  auto read = [&](int r) { return live[static_cast<std::size_t>(r)]; };
  Balancer first(4, 0, 2);
  Balancer second(4, 1, 2);  // vLLM: 4 * 1 / 2 = rank 2, not rank 1
  EXPECT_EQ(first.pick(0.0, read), 0);
  EXPECT_EQ(second.pick(0.0, read), 2);
}

TEST(SimBalancer, ScoreIsFourWaitingPlusRunning) {
  std::vector<RankLoad> live{{1, 0}, {0, 3}, {0, 5}};  // scores 4, 3, 5
  Balancer b(3, 0, 1);
  EXPECT_EQ(b.pick(0.0, [&](int r) { return live[static_cast<std::size_t>(r)]; }), 1);
}

TEST(SimBalancer, ViewIsStaleUntilTheNextRefreshPeriod) {
  std::vector<RankLoad> live(2);
  int reads = 0;
  auto read = [&](int r) {
    ++reads;
    return live[static_cast<std::size_t>(r)];
  };
  Balancer b(2, 0, 2, 0.1);  // two API servers: each pick adds 2 to waiting locally
  EXPECT_EQ(b.pick(0.00, read), 0);
  live[1] = {10, 10};  // not seen until the next period
  EXPECT_EQ(b.pick(0.05, read), 1);
  EXPECT_EQ(reads, 2);
  EXPECT_EQ(b.view()[0].waiting, 2u);
  EXPECT_EQ(b.view()[1].waiting, 2u);
  EXPECT_EQ(b.pick(0.15, read), 0);  // refreshed: rank 1 is loaded, local adjustments dropped
  EXPECT_EQ(reads, 4);
}
