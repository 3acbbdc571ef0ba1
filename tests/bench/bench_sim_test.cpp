// `lm-warden bench` end to end: against `lm-warden sim` directly, and through `lm-warden serve` with
// --compare off,on. Real processes on 127.0.0.1, ephemeral ports, a high time scale so each level lasts
// about a wall second.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "report/report.hpp"
#include "support/child_process.hpp"
#include "support/http.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"

namespace warden::bench {
namespace {

using test_support::ChildProcess;
namespace fs = std::filesystem;

constexpr const char* kModel = "sim-model";

using test_support::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> sim_args(int ranks) {
  return {WARDEN_BINARY,
          "sim",
          "--port",
          "0",
          "--data-parallel-size",
          std::to_string(ranks),
          "--preset",
          "a4000-qwen3-4b",
          "--served-model-name",
          kModel,
          "--time-scale",
          "20"};
}

// A small workload so the test is quick, yet with follow-up turns that can hit the prefix cache.
std::vector<std::string> workload_args() {
  return {"--system-tokens", "600", "--first-tokens", "1200", "--turn-tokens", "100",
          "--turns",         "3",   "--max-output",   "16",   "--time-scale",  "20"};
}

// Runs the bench to completion (bounded) and returns the parsed JSON report (and what it printed, if asked).
report::Report run_bench(std::vector<std::string> args, const std::string& out,
                         std::string* printed = nullptr) {
  args.insert(args.begin(), {WARDEN_BINARY, "bench"});
  for (const std::string& a : workload_args()) {
    args.push_back(a);
  }
  args.push_back("--out");
  args.push_back(out);
  ChildProcess bench(args);
  const std::optional<int> code = bench.wait_exit(std::chrono::seconds(120));
  EXPECT_TRUE(code.has_value()) << "bench did not finish; stderr:\n" << bench.stderr_text();
  EXPECT_EQ(code.value_or(-1), 0) << bench.stderr_text();
  if (printed != nullptr) {
    *printed = bench.stdout_text();
  }
  auto parsed = report::parse_json(slurp(out));
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error()) << "\nstderr:\n" << bench.stderr_text();
  return parsed ? *parsed : report::Report{};
}

// A warden in front of the sim's 2 ranks, with its own state directory, scraping them every 100ms.
std::string write_warden_config(const TempDir& dir, const std::string& name, int sim_port) {
  const std::string config = dir.file(name + ".yaml");
  std::ofstream f(config);
  f << "listen: 127.0.0.1:0\n"
    << "state_dir: " << dir.file(name + "-state") << "\n"
    << "admin_token: secret\n"
    << "metrics: { scrape_interval: 100ms }\n"
    << "models:\n"
    << "  - name: " << kModel << "\n"
    << "    max_num_seqs: 32\n"
    << "    replicas:\n"
    << "      data_parallel: { url: http://127.0.0.1:" << sim_port << ", size: 2 }\n";
  return config;
}

void expect_measured(const report::Row& r) {
  ASSERT_TRUE(r.sessions_per_hour.has_value());
  EXPECT_GT(*r.sessions_per_hour, 0.0);
  ASSERT_TRUE(r.output_tokens_per_min.has_value());
  EXPECT_GT(*r.output_tokens_per_min, 0.0);
  ASSERT_TRUE(r.ttfb_p50.has_value());
  ASSERT_TRUE(r.ttfb_p95.has_value());
  EXPECT_GT(*r.ttfb_p50, 0.0);
  EXPECT_GE(*r.ttfb_p95, *r.ttfb_p50);
  ASSERT_TRUE(r.replicas_busy.has_value());
  EXPECT_GT(*r.replicas_busy, 0.0);
  ASSERT_TRUE(r.prefix_hits.has_value());
  EXPECT_GE(*r.prefix_hits, 0.0);
  EXPECT_LE(*r.prefix_hits, 100.0);
  EXPECT_EQ(r.errors, 0);
}

TEST(BenchAgainstSim, FillsEveryColumnButStayedWithoutAWarden) {
  ChildProcess sim(sim_args(2));
  const int port = sim.wait_for_port();
  TempDir dir;
  const report::Report rep = run_bench({"--url", "http://127.0.0.1:" + std::to_string(port), "--model",
                                        kModel, "--levels", "2,4", "--duration", "20s", "--seed", "7"},
                                       dir.file("out.json"));
  ASSERT_EQ(rep.rows.size(), 2U);
  EXPECT_EQ(rep.rows[0].sessions, 2);
  EXPECT_EQ(rep.rows[1].sessions, 4);
  for (const report::Row& r : rep.rows) {
    SCOPED_TRACE(r.sessions);
    expect_measured(r);
    EXPECT_LE(*r.replicas_busy, 2.0);
    EXPECT_FALSE(r.stayed_on_replica.has_value());  // no x-warden-route without a warden
    // Follow-up turns resend the history: some of it must come from the prefix cache.
    EXPECT_GT(*r.prefix_hits, 0.0);
  }
  EXPECT_EQ(rep.meta.at("time_scale").to_number<double>(), 20.0);
  EXPECT_EQ(rep.meta.at("workload").at("turns").to_number<int>(), 3);
}

TEST(BenchAgainstSim, OpenAiApiAndMarkdownOutput) {
  ChildProcess sim(sim_args(1));
  const int port = sim.wait_for_port();
  TempDir dir;
  std::vector<std::string> args{WARDEN_BINARY, "bench",
                                "--url",       "http://127.0.0.1:" + std::to_string(port),
                                "--model",     kModel,
                                "--api",       "openai",
                                "--levels",    "2",
                                "--duration",  "15s",
                                "--out",       dir.file("out.md")};
  for (const std::string& a : workload_args()) {
    args.push_back(a);
  }
  ChildProcess bench(args);
  const std::optional<int> code = bench.wait_exit(std::chrono::seconds(120));
  ASSERT_TRUE(code.has_value()) << bench.stderr_text();
  ASSERT_EQ(*code, 0) << bench.stderr_text();
  // The .md file is the Markdown table: its header, then one row for 2 sessions, measured, no errors.
  const std::string md = slurp(dir.file("out.md"));
  ASSERT_EQ(md.rfind("| Policy | Sessions |", 0), 0U) << md;
  const std::regex row(R"(\n\| [^|]+ \| 2 \| [0-9,]+ \| [0-9,]+ \| [0-9.]+ \| [0-9.]+ \|.*\| 0 \|\n)");
  EXPECT_TRUE(std::regex_search(md, row)) << md;
}

TEST(BenchThroughWarden, CompareOffOnFillsStayedAndWritesTheChart) {
  ChildProcess sim(sim_args(2));
  const int sim_port = sim.wait_for_port();
  TempDir dir;
  ChildProcess warden({WARDEN_BINARY, "serve", "--config", write_warden_config(dir, "warden", sim_port)});
  const std::string warden_url = "http://127.0.0.1:" + std::to_string(warden.wait_for_port());
  const std::string svg = dir.file("ttfb.svg");
  const report::Report rep =
      run_bench({"--url",         warden_url,
                 "--model",       kModel,
                 "--warden",      warden_url,
                 "--admin-token", "secret",
                 "--metrics",     "http://127.0.0.1:" + std::to_string(sim_port) + "/metrics",
                 "--levels",      "2",
                 "--duration",    "20s",
                 "--compare",     "off,on",
                 "--svg",         svg,
                 "--records",     dir.file("records.jsonl")},
                dir.file("out.json"));
  ASSERT_EQ(rep.rows.size(), 2U);
  const report::Row& off = rep.rows[0];
  const report::Row& on = rep.rows[1];
  EXPECT_EQ(off.policy, "off");
  EXPECT_EQ(on.policy, "on");
  expect_measured(off);
  expect_measured(on);
  // Affinity off has no home replica; affinity on keeps every follow-up of 2 sessions on 2 replicas home.
  EXPECT_FALSE(off.stayed_on_replica.has_value());
  ASSERT_TRUE(on.stayed_on_replica.has_value());
  EXPECT_GT(*on.stayed_on_replica, 90.0);
  // Same prompts, warm cache and stickiness: the second pass reads more from the cache.
  EXPECT_GT(*on.prefix_hits, *off.prefix_hits);
  // Per-request records carry the warden's route and replica.
  std::istringstream records(slurp(dir.file("records.jsonl")));
  std::string line;
  std::size_t lines = 0;
  while (std::getline(records, line)) {
    const boost::json::object o = boost::json::parse(line).as_object();
    EXPECT_TRUE(o.at("replica").is_int64()) << line;
    EXPECT_TRUE(o.at("route").is_string()) << line;
    ++lines;
  }
  EXPECT_GT(lines, 4U);
  const std::string chart = slurp(svg);
  EXPECT_NE(chart.find("data-policy=\"off\" data-stat=\"p50\""), std::string::npos);
  EXPECT_NE(chart.find("data-policy=\"on\" data-stat=\"p95\""), std::string::npos);
}

// Sum of lm_warden_requests_total over every series of a warden's /metrics.
double requests_served(int warden_port) {
  test_support::Client client(warden_port);
  const std::string text = client.get("/metrics").body;
  const std::regex series(R"(\nlm_warden_requests_total\{[^}]*\} ([0-9.e+]+))");
  double total = 0.0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), series); it != std::sregex_iterator(); ++it) {
    total += std::stod((*it)[1].str());
  }
  return total;
}

TEST(BenchOverTwoWardens, EachSessionsTurnsAlternateBetweenTheWardens) {
  ChildProcess sim(sim_args(2));
  const int sim_port = sim.wait_for_port();
  TempDir dir;
  ChildProcess first({WARDEN_BINARY, "serve", "--config", write_warden_config(dir, "first", sim_port)});
  ChildProcess second({WARDEN_BINARY, "serve", "--config", write_warden_config(dir, "second", sim_port)});
  const int ports[2] = {first.wait_for_port(), second.wait_for_port()};
  const std::string urls[2] = {"http://127.0.0.1:" + std::to_string(ports[0]),
                               "http://127.0.0.1:" + std::to_string(ports[1])};
  const std::string metrics = "http://127.0.0.1:" + std::to_string(sim_port) + "/metrics";
  const std::vector<std::string> load = {"--model",  kModel, "--metrics",  metrics,
                                         "--levels", "4",    "--duration", "20s"};
  // First the first warden alone, as the baseline the spread run is printed beside.
  std::vector<std::string> alone = {"--url",       urls[0],   "--label",   "one",
                                    "--stayed-by", "replica", "--records", dir.file("one.jsonl")};
  alone.insert(alone.end(), load.begin(), load.end());
  const report::Report baseline = run_bench(alone, dir.file("one.json"));
  ASSERT_EQ(baseline.rows.size(), 1U);
  // Then both: a comma-separated list (the flag may also be repeated).
  std::vector<std::string> spread = {
      "--url",     urls[0] + "," + urls[1],   "--label",    "two",
      "--records", dir.file("records.jsonl"), "--baseline", dir.file("one.json")};
  spread.insert(spread.end(), load.begin(), load.end());
  std::string printed;
  const report::Report rep = run_bench(spread, dir.file("two.json"), &printed);
  EXPECT_NE(printed.find("| Sessions | Prefix hits (%) one → two | ratio |"), std::string::npos) << printed;
  EXPECT_NE(printed.find("\n| 4 | "), std::string::npos) << printed;
  ASSERT_EQ(rep.rows.size(), 1U);
  expect_measured(rep.rows[0]);
  // Measured by replica continuity (without shared state the two wardens' homes may differ: no value).
  EXPECT_TRUE(rep.rows[0].stayed_on_replica.has_value());
  EXPECT_EQ(rep.meta.at("stayed_on_replica_by").as_string(), "replica");
  EXPECT_EQ(rep.meta.at("urls").as_array().size(), 2U);

  // Every follow-up went to the other warden than its session's previous turn; both served half.
  std::istringstream records(slurp(dir.file("records.jsonl")));
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> last;  // session -> (turn, target)
  std::size_t sent[2] = {0, 0};
  std::size_t follow_ups = 0;
  std::string line;
  while (std::getline(records, line)) {
    const boost::json::object o = boost::json::parse(line).as_object();
    ASSERT_TRUE(o.at("target").is_int64()) << line;
    const std::int64_t session = o.at("session").as_int64();
    const std::int64_t turn = o.at("turn").as_int64();
    const std::int64_t target = o.at("target").as_int64();
    ASSERT_TRUE(target == 0 || target == 1) << line;
    ++sent[target];
    if (auto it = last.find(session); it != last.end() && it->second.first + 1 == turn) {
      EXPECT_NE(it->second.second, target) << line;
      ++follow_ups;
    }
    last[session] = {turn, target};
  }
  EXPECT_GT(follow_ups, 4U);
  EXPECT_GT(sent[0], 2U);
  EXPECT_GT(sent[1], 2U);
  EXPECT_LE(sent[0] > sent[1] ? sent[0] - sent[1] : sent[1] - sent[0], 4U);  // at most one per session
  // The wardens' own counters agree that both served (each counts what it relayed, as the stream ends); the
  // first one also served the baseline.
  const std::string baseline_records = slurp(dir.file("one.jsonl"));
  const auto expected = std::array<double, 2>{
      static_cast<double>(sent[0] + static_cast<std::size_t>(
                                        std::count(baseline_records.begin(), baseline_records.end(), '\n'))),
      static_cast<double>(sent[1])};
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(test_support::wait_until([&] { return requests_served(ports[i]) == expected[i]; },
                                         std::chrono::seconds(5)))
        << "warden " << i << " counted " << requests_served(ports[i]) << ", the bench sent " << expected[i];
  }
}

TEST(BenchThroughWarden, CompareFailsClearlyWithAWrongAdminToken) {
  ChildProcess sim(sim_args(1));
  const int sim_port = sim.wait_for_port();
  TempDir dir;
  const std::string config = dir.file("warden.yaml");
  {
    std::ofstream f(config);
    f << "listen: 127.0.0.1:0\nstate_dir: " << dir.file("state")
      << "\nadmin_token: secret\nmodels:\n  - name: " << kModel
      << "\n    replicas:\n      data_parallel: { url: http://127.0.0.1:" << sim_port << ", size: 1 }\n";
  }
  ChildProcess warden({WARDEN_BINARY, "serve", "--config", config});
  const std::string warden_url = "http://127.0.0.1:" + std::to_string(warden.wait_for_port());
  ChildProcess bench({WARDEN_BINARY, "bench", "--url", warden_url, "--model", kModel, "--warden", warden_url,
                      "--admin-token", "wrong", "--levels", "1", "--duration", "5s", "--compare", "off,on"});
  const std::optional<int> code = bench.wait_exit(std::chrono::seconds(30));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1);
  EXPECT_NE(bench.stderr_text().find("HTTP 401"), std::string::npos) << bench.stderr_text();
}

TEST(BenchInterrupted, CtrlCPrintsWhatWasMeasuredSoFar) {
  ChildProcess sim(sim_args(1));
  const int port = sim.wait_for_port();
  TempDir dir;
  const std::string out = dir.file("out.json");
  std::vector<std::string> args = {
      WARDEN_BINARY,    "bench", "--url",    "http://127.0.0.1:" + std::to_string(port),
      "--model",        kModel,  "--levels", "2,4",
      "--duration",     "1h",    "--out",    out,
      "--log-interval", "0.1"};
  for (const std::string& a : workload_args()) {
    args.push_back(a);
  }
  ChildProcess bench(args);
  // Wait (bounded) until the progress line shows a finished request, then interrupt.
  const std::regex some_requests(R"(requests +[1-9])");
  ASSERT_TRUE(test_support::wait_until([&] { return std::regex_search(bench.stderr_text(), some_requests); },
                                       std::chrono::seconds(60)))
      << bench.stderr_text();
  bench.signal(SIGINT);
  const std::optional<int> code = bench.wait_exit(std::chrono::seconds(30));
  ASSERT_TRUE(code.has_value()) << bench.stderr_text();
  EXPECT_EQ(*code, 130);
  EXPECT_NE(bench.stdout_text().find("sessions"), std::string::npos);
  auto rep = report::parse_json(slurp(out));
  ASSERT_TRUE(rep.has_value());
  ASSERT_EQ(rep->rows.size(), 1U);
  EXPECT_TRUE(rep->meta.at("interrupted").as_bool());
  EXPECT_TRUE(rep->rows[0].ttfb_p50.has_value());
}

}  // namespace
}  // namespace warden::bench
