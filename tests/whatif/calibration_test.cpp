// Calibration regression: the fitted reference setup (reference_setup(), docs/simulator.md) against the
// reference table with issue 6's tolerances. The full 5-level x 2-policy run takes a few seconds of CPU,
// so the test runs it whole rather than a shortened variant that would measure something else.
#include <gtest/gtest.h>

#include <set>

#include "whatif/calibration.hpp"
#include "whatif/driver.hpp"

namespace warden::whatif {
namespace {

const Outcome& reference_run() {
  static const Outcome outcome = [] {
    auto o = simulate(reference_setup());
    if (!o) {
      throw std::runtime_error(o.error());
    }
    return *o;
  }();
  return outcome;
}

const report::Row& row_of(std::string_view policy, int sessions) {
  for (const auto& r : reference_run().rows) {
    if (r.policy == policy && r.sessions == sessions) {
      return r;
    }
  }
  throw std::runtime_error("row missing");
}

// Cells the model does not reach without distorting it (docs/simulator.md, "What cannot be matched"),
// each with the looser bound it must still hold so a regression shows.
struct KnownGap {
  int sessions;
  std::string column;
  std::string side;
  double max_ratio;  // simulated/reference (or its inverse) may not exceed this
};

const std::vector<KnownGap>& known_gaps() {
  static const std::vector<KnownGap> gaps{
      {16, "TTFB p50 (s)", "off", 2.5},
      {16, "TTFB p50 (s)", "on", 6.5},
      // The other half of the same contradiction: the p95 comes out low (x1.505 at seed 1).
      {16, "TTFB p95 (s)", "off", 1.6},
      {32, "output tokens/min", "off", 1.75},
      {32, "output tokens/min", "on", 1.9},
      // Current vLLM's balancer (the default) sends follow-ups back to a warm rank more often than the
      // legacy one did at seed 1 (56 % against the reference's 44.3; 53.6-56.4 over seeds 1-4).
      {8, "prefix hits (%)", "off", 1.35},
  };
  return gaps;
}

std::set<std::string> failed_cells(const std::vector<report::Row>& rows) {
  std::set<std::string> failed;
  for (const CellCheck& c : check_against_reference(rows, "vllm-lb", "affinity").checks) {
    if (!c.pass) {
      failed.insert(std::to_string(c.sessions) + " " + c.column + " " + c.side);
    }
  }
  return failed;
}

// The legacy balancer (4 * waiting + running, older vLLM) keeps the fit it was made with: the structural
// misses fail, and at 8 sessions its TTFB p95 and hits (each level on its own draws since policies and
// levels stopped sharing random streams).
TEST(WhatifCalibration, LegacyBalancerKeepsItsFit) {
  SimulationConfig config = reference_setup();
  config.routing.vllm_balancer = core::VllmBalancerModel::legacy;
  const auto outcome = simulate(config);
  ASSERT_TRUE(outcome) << outcome.error();
  EXPECT_EQ(failed_cells(outcome->rows),
            (std::set<std::string>{"16 TTFB p50 (s) off", "16 TTFB p50 (s) on", "16 TTFB p95 (s) off",
                                   "32 output tokens/min on", "8 TTFB p95 (s) off", "8 TTFB p95 (s) winner",
                                   "8 prefix hits (%) off"}));
}

// Older vLLM admitted a waiting request when its first chunk fitted. Past the caches that preempts ten
// times as often for the same output (recompute is cheap: the preempted prefix is still cached), and the
// 16-session tail comes out short, as the fit used to show.
TEST(WhatifCalibration, FirstChunkAdmissionThrashesForNothing) {
  SimulationConfig config = reference_setup();
  config.engine.reserve_full_prompt = 0;
  const auto older = simulate(config);
  ASSERT_TRUE(older) << older.error();
  const auto& current = reference_run();
  for (std::size_t i = 0; i < current.levels.size(); ++i) {
    const LevelStats& now = current.levels[i];
    const LevelStats& then = older->levels[i];
    if (now.sessions < 24) {
      continue;
    }
    EXPECT_GE(then.preemptions, 5 * std::max<std::uint64_t>(now.preemptions, 1))
        << now.policy << now.sessions;
    const double out_now = *current.rows[i].output_tokens_per_min;
    const double out_then = *older->rows[i].output_tokens_per_min;
    EXPECT_NEAR(out_then / out_now, 1.0, 0.03) << now.policy << now.sessions;
  }
  EXPECT_EQ(
      failed_cells(older->rows),
      (std::set<std::string>{"4 output tokens/min on", "4 output tokens/min winner", "16 TTFB p50 (s) on",
                             "16 TTFB p50 (s) winner", "16 TTFB p95 (s) off", "16 TTFB p95 (s) on",
                             "32 output tokens/min off", "32 output tokens/min on"}));
}

// The overloaded rows' TTFB against the headroom rows' band (reported, not judged): with affinity both
// cells are inside at 24 and 32; vLLM's balancer waits too long at the median and too little at p95.
TEST(WhatifCalibration, OverloadedTtfbAgainstTheHeadroomBand) {
  const Calibration cal = check_against_reference(reference_run().rows, "vllm-lb", "affinity");
  ASSERT_EQ(cal.overload_bands.size(), 8U);
  for (const CellCheck& c : cal.overload_bands) {
    ASSERT_TRUE(c.reference && c.simulated);
    const double ratio = std::max(*c.simulated / *c.reference, *c.reference / *c.simulated);
    EXPECT_LE(ratio, c.side == "on" ? 1.5 : 4.0) << c.sessions << " " << c.column << " " << c.side;
  }
}

TEST(WhatifCalibration, ReferenceTableWithinTolerances) {
  const Calibration cal = check_against_reference(reference_run().rows, "vllm-lb", "affinity");
  ASSERT_EQ(cal.checks.size(), 44U);
  for (const CellCheck& c : cal.checks) {
    const auto gap = std::find_if(known_gaps().begin(), known_gaps().end(), [&](const KnownGap& g) {
      return g.sessions == c.sessions && g.column == c.column && g.side == c.side;
    });
    if (gap == known_gaps().end()) {
      EXPECT_TRUE(c.pass) << c.sessions << " sessions, " << c.column << " (" << c.side << "): reference "
                          << c.reference.value_or(-1) << ", simulated " << c.simulated.value_or(-1)
                          << ", rule " << c.rule;
      continue;
    }
    ASSERT_TRUE(c.reference && c.simulated);
    const double ratio = std::max(*c.simulated / *c.reference, *c.reference / *c.simulated);
    EXPECT_LE(ratio, gap->max_ratio) << c.sessions << " sessions, " << c.column << " (" << c.side << ")";
  }
}

TEST(WhatifCalibration, AffinityWinsWithHeadroom) {
  for (const int n : {4, 8, 16}) {
    const auto& off = row_of("vllm-lb", n);
    const auto& on = row_of("affinity", n);
    EXPECT_GT(*on.prefix_hits, *off.prefix_hits + 10) << n;
    EXPECT_LT(*on.ttfb_p50, *off.ttfb_p50) << n;
    EXPECT_GE(*on.output_tokens_per_min, *off.output_tokens_per_min) << n;
    EXPECT_EQ(on.stayed_on_replica, 100.0) << n;
  }
}

TEST(WhatifCalibration, OverloadShowsNoMedianPenaltyForAffinity) {
  // What the model shows at 24 and 32 sessions (the reference's worse median with affinity is not
  // reproduced; docs/simulator.md explains why): the cache thrashes under both policies, hit rates meet,
  // and the medians stay within 10% of each other.
  for (const int n : {24, 32}) {
    const auto& off = row_of("vllm-lb", n);
    const auto& on = row_of("affinity", n);
    EXPECT_NEAR(*on.prefix_hits, *off.prefix_hits, 3.0) << n;
    EXPECT_LE(*on.ttfb_p50, *off.ttfb_p50 * 1.1) << n;
  }
}

}  // namespace
}  // namespace warden::whatif
