// Each policy of a run is its own experiment: its rows are the same, byte for byte, whether it runs alone
// or after other policies in the same run (without --warm-start, which carries the engines on purpose).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/presets.hpp"
#include "report/report.hpp"
#include "whatif/driver.hpp"

namespace warden::whatif {
namespace {

// Two levels, client jitter and routing ties: every stream a policy draws from is used, and the second
// level starts after a first whose draws depend on the policy.
SimulationConfig config(std::vector<std::string> policies) {
  SimulationConfig c;
  c.engine = *engine::find_preset("a4000-qwen3-4b");
  c.engine.num_gpu_blocks = 1200;  // past the caches at 8 sessions: the policies part ways
  c.replicas = 3;
  c.levels = {4, 8};
  c.duration = 60;
  c.workload.think_time = 1;
  c.think_jitter = 1;
  c.seed = 3;
  c.policies = std::move(policies);
  return c;
}

// The rows and level figures of `policy` in a run, as JSON.
std::string rows_of(const std::vector<std::string>& policies, const std::string& policy) {
  const auto o = simulate(config(policies));
  EXPECT_TRUE(o) << o.error();
  report::Report rep;
  std::string levels;
  for (std::size_t i = 0; o && i < o->rows.size(); ++i) {
    if (o->rows[i].policy == policy) {
      rep.rows.push_back(o->rows[i]);
      const LevelStats& l = o->levels[i];
      levels += std::to_string(l.requests) + "/" + std::to_string(l.preemptions) + "/" +
                std::to_string(l.held) + "/" + std::to_string(l.end - l.begin) + ";";
    }
  }
  EXPECT_EQ(rep.rows.size(), 2U) << policy;
  return report::to_json(rep) + levels;
}

TEST(WhatifIndependence, APolicysRowsAreTheSameAloneAndAfterOthers) {
  const std::string affinity = rows_of({"affinity"}, "affinity");
  EXPECT_EQ(rows_of({"vllm-lb", "affinity"}, "affinity"), affinity);
  EXPECT_EQ(rows_of({"session-hash", "admission", "affinity"}, "affinity"), affinity);
  const std::string vllm = rows_of({"vllm-lb"}, "vllm-lb");
  EXPECT_EQ(rows_of({"affinity", "vllm-lb"}, "vllm-lb"), vllm);
  EXPECT_EQ(rows_of({"ceiling", "warden-lb", "vllm-lb"}, "vllm-lb"), vllm);
}

}  // namespace
}  // namespace warden::whatif
