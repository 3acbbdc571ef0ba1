// `lm-warden simulate`'s routing flags: the named ones and `--routing KEY=VALUE` set the same settings
// through the table of routing settings (the real binary; runs of 30 s in virtual time).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/child_process.hpp"

namespace {

using test_support::ChildProcess;

struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};

Ran simulate(std::vector<std::string> flags) {
  std::vector<std::string> args = {WARDEN_BINARY, "simulate", "--levels",   "16",
                                   "--duration",  "30s",      "--policies", "affinity,admission"};
  args.insert(args.end(), flags.begin(), flags.end());
  ChildProcess p(args);
  Ran r;
  r.code = p.wait_exit(std::chrono::seconds(60)).value_or(-1);
  r.out = p.stdout_text();
  r.err = p.stderr_text();
  return r;
}

}  // namespace

TEST(SimulateRouting, TheNamedFlagsAndRoutingKeyValueSetTheSameSettings) {
  const Ran named = simulate({"--rebalance",
                              "off",
                              "--cost-spill",
                              "off",
                              "--spill-margin",
                              "3s",
                              "--admission-high",
                              "1.2",
                              "--admission-low",
                              "0.8",
                              "--max-wait",
                              "10s",
                              "--max-queue",
                              "5",
                              "--admission-when-waiting",
                              "on",
                              "--task-admission",
                              "off",
                              "--task-admission-wait",
                              "2m",
                              "--spill-threshold",
                              "1"});
  const Ran keyed =
      simulate({"--routing", "rebalance=off",           "--routing", "cost_spill=off",
                "--routing", "cost_spill.margin=3s",    "--routing", "admission.high_water=1.2",
                "--routing", "admission.low_water=0.8", "--routing", "admission.max_wait=10s",
                "--routing", "admission.max_queue=5",   "--routing", "admission.when_waiting=true",
                "--routing", "task_admission=off",      "--routing", "task_admission.max_wait=2m",
                "--routing", "spill_threshold=1"});
  const Ran defaults = simulate({});
  ASSERT_EQ(named.code, 0) << named.err;
  ASSERT_EQ(keyed.code, 0) << keyed.err;
  ASSERT_EQ(defaults.code, 0) << defaults.err;
  EXPECT_EQ(named.out, keyed.out);
  EXPECT_NE(named.out, defaults.out) << "the settings change the run";
}

TEST(SimulateRouting, ASettingTheTableRefusesStopsTheRunWithItsReason) {
  Ran r = simulate({"--routing", "colour=1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--routing colour=1: unknown key 'colour' in routing; expected one of: affinity"),
            std::string::npos)
      << r.err;
  r = simulate({"--rebalance", "sometimes"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--rebalance sometimes: rebalance must be true or false"), std::string::npos) << r.err;
  r = simulate({"--routing", "admission.hold_task_starts=true", "--admission-low", "1.5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("admission.low_water must not exceed admission.high_water"), std::string::npos)
      << r.err;
}
