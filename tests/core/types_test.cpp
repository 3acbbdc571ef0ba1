#include <gtest/gtest.h>

#include <iterator>

#include "core/types.hpp"

namespace warden::core {
namespace {

TEST(SpillThreshold, AutoIsAQuarterOfMaxNumSeqsAndAtLeastOne) {
  const SpillThreshold automatic;
  EXPECT_EQ(automatic.resolve(32), 8u);
  EXPECT_EQ(automatic.resolve(256), 64u);
  EXPECT_EQ(automatic.resolve(7), 1u);
  EXPECT_EQ(automatic.resolve(3), 1u);
  EXPECT_EQ(automatic.resolve(0), 1u);
}

TEST(SpillThreshold, FixedIgnoresMaxNumSeqs) {
  const SpillThreshold fixed{4};
  EXPECT_EQ(fixed.resolve(32), 4u);
  EXPECT_EQ(fixed.resolve(1024), 4u);
}

TEST(SpillThreshold, ParsesAutoAndPositiveIntegersOnly) {
  EXPECT_EQ(SpillThreshold::parse("auto"), SpillThreshold{});
  EXPECT_EQ(SpillThreshold::parse("12"), SpillThreshold{12});
  EXPECT_FALSE(SpillThreshold::parse(""));
  EXPECT_FALSE(SpillThreshold::parse("0"));
  EXPECT_EQ(SpillThreshold::parse("1000000"), SpillThreshold{SpillThreshold::max_fixed});
  EXPECT_FALSE(SpillThreshold::parse("1000001"));
  EXPECT_FALSE(SpillThreshold::parse("-3"));
  EXPECT_FALSE(SpillThreshold::parse("8x"));
  EXPECT_FALSE(SpillThreshold::parse("99999999999"));
  EXPECT_FALSE(SpillThreshold::parse("Auto "));
}

TEST(SpillThreshold, LabelsForTheConsole) {
  EXPECT_EQ(SpillThreshold{}.label(32), "8 (auto)");
  EXPECT_EQ(SpillThreshold{4}.label(32), "4");
  EXPECT_EQ(SpillThreshold{}.to_string(), "auto");
  EXPECT_EQ(SpillThreshold{5}.to_string(), "5");
}

TEST(Route, NamesRoundTrip) {
  const Route all[] = {Route::new_conversation, Route::sticky,   Route::spilled, Route::pinned,
                       Route::balanced,         Route::failover, Route::queued,  Route::rehomed};
  const char* expected[] = {"new",      "sticky",   "spilled", "pinned",
                            "balanced", "failover", "queued",  "rehomed"};
  static_assert(std::size(all) == route_count);
  for (std::size_t i = 0; i < route_count; ++i) {
    EXPECT_EQ(route_name(all[i]), expected[i]);
    EXPECT_EQ(parse_route(expected[i]), all[i]);
  }
  EXPECT_FALSE(parse_route("stuck"));
}

TEST(Snapshot, ResolvesThresholdAgainstMaxNumSeqs) {
  Snapshot s;
  s.routing.max_num_seqs = 64;
  EXPECT_EQ(s.spill_threshold(), 16u);
  s.routing.max_num_seqs = 0;
  EXPECT_EQ(s.max_num_seqs(), 1u);
  EXPECT_EQ(s.spill_threshold(), 1u);
  s.routing.spill_threshold = SpillThreshold{5};
  EXPECT_EQ(s.spill_threshold(), 5u);
}

TEST(VllmBalancerModel, DefaultsToCurrentAndNamesRoundTrip) {
  RoutingConfig config;
  EXPECT_EQ(config.vllm_balancer, VllmBalancerModel::current);
  for (const auto model : {VllmBalancerModel::current, VllmBalancerModel::legacy}) {
    EXPECT_EQ(parse_vllm_balancer_model(vllm_balancer_model_name(model)), model);
  }
  EXPECT_EQ(parse_vllm_balancer_model("newest"), std::nullopt);
}

TEST(Names, Reasons) {
  EXPECT_EQ(no_replica_reason_name(NoReplicaReason::no_healthy_replica), "no healthy replica");
}

}  // namespace
}  // namespace warden::core
