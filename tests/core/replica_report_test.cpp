// The one path from an engine's figures to the routing input (serve and simulate both take it).
#include "core/replica_report.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "core/router.hpp"

namespace warden::core {
namespace {

using std::chrono::seconds;

ReplicaReport busy_report(double queries, double hits) {
  ReplicaReport r;
  r.running = 3;
  r.waiting = 2;
  r.kv_usage = 0.5;
  r.num_gpu_blocks = 2500;
  r.block_size = 16;
  r.prefix_queries_total = queries;
  r.prefix_hits_total = hits;
  return r;
}

TEST(ReplicaReport, FillsTheRoutingView) {
  ReplicaFigures m;
  PrefillRate rate;
  observe_report(m, rate, busy_report(10'000, 4'000), seconds(1));
  EXPECT_EQ(m.running, 3u);
  EXPECT_EQ(m.waiting, 2u);
  EXPECT_DOUBLE_EQ(m.kv_usage, 0.5);
  EXPECT_EQ(m.kv_capacity_tokens, 40'000u) << "blocks x block size";
  EXPECT_EQ(m.computed(), 6'000u) << "queries - hits";
  EXPECT_EQ(m.prefill_tokens_per_second, 0.0) << "one scrape measures no rate";
  observe_report(m, rate, busy_report(14'000, 5'000), seconds(2));
  EXPECT_EQ(m.computed(), 9'000u);
  EXPECT_GT(m.prefill_tokens_per_second, 0.0) << "waiting at both ends: 3000 computed in a second";
  EXPECT_EQ(m.prefill_tokens_per_second, rate.tokens_per_second());
}

TEST(ReplicaReport, HostileOrMissingFiguresAreClampedOrLeftUnknown) {
  ReplicaFigures m;
  PrefillRate rate;
  observe_report(m, rate, busy_report(10'000, 4'000), seconds(1));
  ReplicaReport bad;
  bad.running = -4;
  bad.waiting = std::numeric_limits<double>::infinity();
  bad.kv_usage = std::numeric_limits<double>::quiet_NaN();
  bad.prefix_queries_total = 10;
  bad.prefix_hits_total = 20;  // more hits than queries
  observe_report(m, rate, bad, seconds(2));
  EXPECT_EQ(m.running, 0u);
  EXPECT_EQ(m.waiting, 0u);
  EXPECT_EQ(m.kv_usage, 0.0);
  EXPECT_FALSE(m.computed().has_value());
  EXPECT_EQ(m.kv_capacity_tokens, 40'000u) << "kept from the report that had it";
  EXPECT_EQ(computed_tokens(ReplicaReport{}), std::nullopt);
}

TEST(ReplicaReport, HostOffloadInTokens) {
  ReplicaReport r = busy_report(0, 0);  // 2500 blocks of 16 tokens
  EXPECT_EQ(offload_capacity_tokens(r), 0u) << "no offload";
  r.kv_offloading_gib = 16;
  EXPECT_EQ(offload_capacity_tokens(r), 0u) << "16 GiB, but no figure turns GiB into tokens";
  r.kv_cache_memory_bytes = std::int64_t{4} << 30;  // 40,000 tokens in 4 GiB
  EXPECT_EQ(offload_capacity_tokens(r), 160'000u) << "16 GiB at the GPU pool's 10,000 tokens a GiB";
  r.num_cpu_blocks = 7281;
  EXPECT_EQ(offload_capacity_tokens(r), 7281u * 16u) << "the engine's own count of host blocks comes first";
  r.num_cpu_blocks = 0;  // vLLM V1 says 0 whatever it offloads
  EXPECT_EQ(offload_capacity_tokens(r), 160'000u);
  r.block_size.reset();
  EXPECT_EQ(offload_capacity_tokens(r), std::nullopt) << "a report without the cache config says nothing";

  ReplicaFigures m;
  PrefillRate rate;
  r = busy_report(0, 0);
  r.num_cpu_blocks = 100;
  observe_report(m, rate, r, seconds(1));
  EXPECT_EQ(m.offload_capacity_tokens, 1'600u);
  observe_report(m, rate, ReplicaReport{}, seconds(2));
  EXPECT_EQ(m.offload_capacity_tokens, 1'600u) << "kept from the report that had it";
  observe_report(m, rate, busy_report(0, 0), seconds(3));
  EXPECT_EQ(m.offload_capacity_tokens, 0u) << "the engine restarted without offload";
}

TEST(ReplicaReport, HostileOffloadFiguresGiveNoCapacity) {
  ReplicaReport r = busy_report(0, 0);
  r.kv_offloading_gib = std::numeric_limits<double>::infinity();
  r.kv_cache_memory_bytes = 1;
  EXPECT_EQ(offload_capacity_tokens(r), 0u);
  r.kv_offloading_gib = 1e6;  // the largest size taken, at a token per byte and more: bounded
  r.num_gpu_blocks = (std::int64_t{1} << 40) - 1;
  EXPECT_LE(*offload_capacity_tokens(r), 1'000'000'000'000'000u);
  r.num_cpu_blocks = std::numeric_limits<std::int64_t>::max();
  EXPECT_LE(*offload_capacity_tokens(r), 1'000'000'000'000'000u) << "an absurd block count is ignored";
  r.num_cpu_blocks = -5;
  r.kv_offloading_gib = -1;
  EXPECT_EQ(offload_capacity_tokens(r), 0u);
}

TEST(ReplicaReport, TheDecisionSeesEveryFigureObserved) {
  std::vector<ReplicaMetrics> metrics(2);
  PrefillRate rate;
  observe_report(metrics[1], rate, busy_report(10'000, 4'000), seconds(1));
  ReplicaReport offloading = busy_report(14'000, 5'000);
  offloading.num_cpu_blocks = 7'000;
  observe_report(metrics[1], rate, offloading, seconds(2));
  Router router;
  const ReplicaState state = router.snapshot(metrics, seconds(2)).replicas[1];
  EXPECT_EQ(state.running, 3u);
  EXPECT_EQ(state.waiting, 2u);
  EXPECT_DOUBLE_EQ(state.kv_usage, 0.5);
  EXPECT_EQ(state.kv_capacity_tokens, 40'000u);
  EXPECT_EQ(state.offload_capacity_tokens, 112'000u);
  EXPECT_EQ(state.computed(), 9'000u);
  EXPECT_GT(state.prefill_tokens_per_second, 0.0);
  EXPECT_EQ(state.prefill_tokens_per_second, metrics[1].prefill_tokens_per_second);
}

}  // namespace
}  // namespace warden::core
