// The what-if run must not drift from the real thing: the same short scenario run in real time
// (`lm-warden sim` + `lm-warden serve` + `lm-warden bench --compare off,on`) and in virtual time
// (`lm-warden simulate --compare warden-lb,affinity`, the warden with affinity off then on) must agree on
// the prefix hit rate (within a few points) and on stickiness. Real processes on 127.0.0.1, ephemeral
// ports; the sim runs 20x faster than real time and the warden scrapes every 50 ms (1 s of model time).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "report/report.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace warden::bench {
namespace {

using test_support::ChildProcess;
namespace fs = std::filesystem;

constexpr const char* kModel = "sim-model";

using test_support::TempDir;

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The scenario both runs share: 4 replicas of the reference engine, 4 sessions for 60 model seconds,
// a small agent workload (follow-ups that hit the cache), seed 3.
std::vector<std::string> scenario_args() {
  return {"--levels",       "4",    "--duration",    "60s", "--seed",  "3", "--system-tokens", "600",
          "--first-tokens", "1500", "--turn-tokens", "100", "--turns", "4", "--max-output",    "24"};
}

report::Report run_to_report(std::vector<std::string> args, const std::string& out) {
  for (const std::string& a : scenario_args()) {
    args.push_back(a);
  }
  args.push_back("--out");
  args.push_back(out);
  ChildProcess p(args);
  const std::optional<int> code = p.wait_exit(std::chrono::seconds(150));
  EXPECT_TRUE(code.has_value()) << args[1] << " did not finish; stderr:\n" << p.stderr_text();
  EXPECT_EQ(code.value_or(-1), 0) << p.stderr_text();
  auto parsed = report::parse_json(read_all(out));
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error()) << "\nstderr:\n" << p.stderr_text();
  return parsed ? *parsed : report::Report{};
}

TEST(WhatifAgreement, VirtualTimeRunMatchesServeSimBench) {
  TempDir dir;

  // Real time: sim (4 ranks) behind the warden, bench comparing affinity off then on.
  // Replies run to --max-output on both sides (simulate's replies are off unless it is told otherwise).
  ChildProcess sim({WARDEN_BINARY, "sim", "--port", "0", "--data-parallel-size", "4", "--preset",
                    "a4000-qwen3-4b", "--served-model-name", kModel, "--time-scale", "20", "--reply-median",
                    "0"});
  const int sim_port = sim.wait_for_port();
  const std::string config = dir.file("warden.yaml");
  {
    std::ofstream f(config);
    f << "listen: 127.0.0.1:0\n"
      << "state_dir: " << dir.file("state") << "\n"
      << "admin_token: secret\n"
      << "metrics: { scrape_interval: 50ms }\n"
      << "models:\n"
      << "  - name: " << kModel << "\n"
      << "    max_num_seqs: 32\n"
      << "    replicas:\n"
      << "      data_parallel: { url: http://127.0.0.1:" << sim_port << ", size: 4 }\n";
  }
  ChildProcess warden({WARDEN_BINARY, "serve", "--config", config});
  const std::string warden_url = "http://127.0.0.1:" + std::to_string(warden.wait_for_port());
  const report::Report real = run_to_report(
      {WARDEN_BINARY, "bench", "--url", warden_url, "--model", kModel, "--warden", warden_url,
       "--admin-token", "secret", "--metrics", "http://127.0.0.1:" + std::to_string(sim_port) + "/metrics",
       "--compare", "off,on", "--time-scale", "20", "--no-billing-header"},  // simulate sends none
      dir.file("real.json"));

  // Virtual time: the same scenario through the what-if driver.
  const report::Report whatif =
      run_to_report({WARDEN_BINARY, "simulate", "--preset", "a4000-qwen3-4b", "--replicas", "4", "--compare",
                     "warden-lb,affinity", "--scrape-interval", "1s"},
                    dir.file("whatif.json"));

  ASSERT_EQ(real.rows.size(), 2U);
  ASSERT_EQ(whatif.rows.size(), 2U);
  const report::Row& real_off = real.rows[0];
  const report::Row& real_on = real.rows[1];
  const report::Row& sim_off = whatif.rows[0];
  const report::Row& sim_on = whatif.rows[1];
  ASSERT_TRUE(real_off.prefix_hits && real_on.prefix_hits && sim_off.prefix_hits && sim_on.prefix_hits);
  std::printf(
      "prefix hits off -> on: real %.1f -> %.1f, what-if %.1f -> %.1f; stayed on: real %.1f, what-if %.1f\n",
      *real_off.prefix_hits, *real_on.prefix_hits, *sim_off.prefix_hits, *sim_on.prefix_hits,
      real_on.stayed_on_replica.value_or(-1), sim_on.stayed_on_replica.value_or(-1));
  // Affinity on: the hit rate is set by the cache and the stickiness, which both runs share.
  EXPECT_NEAR(*sim_on.prefix_hits, *real_on.prefix_hits, 5.0);
  // Affinity off: random ties make it noisier; still the same regime.
  EXPECT_NEAR(*sim_off.prefix_hits, *real_off.prefix_hits, 12.0);
  EXPECT_GT(*sim_on.prefix_hits, *sim_off.prefix_hits);
  EXPECT_GT(*real_on.prefix_hits, *real_off.prefix_hits);
  // Same stickiness: every follow-up home with headroom, in both.
  ASSERT_TRUE(real_on.stayed_on_replica && sim_on.stayed_on_replica);
  EXPECT_EQ(*sim_on.stayed_on_replica, 100.0);
  EXPECT_GE(*real_on.stayed_on_replica, 99.0);
  EXPECT_FALSE(real_off.stayed_on_replica.has_value());
  EXPECT_FALSE(sim_off.stayed_on_replica.has_value());
}

TEST(WhatifCommand, SameSeedPrintsAndWritesTheSameBytes) {
  TempDir dir;
  const auto run = [&](const std::string& seed, const std::string& name) {
    ChildProcess p({WARDEN_BINARY, "simulate", "--compare", "vllm-lb,affinity", "--levels", "4,8",
                    "--duration", "60s", "--think-time", "2s", "--seed", seed, "--out",
                    dir.file(name + ".json"), "--svg", dir.file(name + ".svg")});
    const std::optional<int> code = p.wait_exit(std::chrono::seconds(60));
    EXPECT_EQ(code.value_or(-1), 0) << p.stderr_text();
    return p.stdout_text() + read_all(dir.file(name + ".json")) + read_all(dir.file(name + ".svg"));
  };
  const std::string a = run("5", "a");
  const std::string b = run("5", "b");
  const std::string c = run("6", "c");
  EXPECT_NE(a.find("vllm-lb"), std::string::npos);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace warden::bench
