// `lm-warden bench --workload agentic` end to end through real processes: a warden in front of
// `lm-warden sim`, coding agents with tool rounds and subagents, and the task columns filled.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "report/report.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace warden::bench {
namespace {

using test_support::ChildProcess;
using test_support::TempDir;

constexpr const char* kModel = "sim-model";

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A warden (`top`: more top-level lines of its config) in front of a 2-rank `lm-warden sim`.
std::string warden_config(const TempDir& dir, int sim_port, const std::string& top) {
  const std::string config = dir.file("warden.yaml");
  std::ofstream f(config);
  f << "listen: 127.0.0.1:0\n"
    << "state_dir: " << dir.file("state") << "\n"
    << top << "metrics: { scrape_interval: 100ms }\n"
    << "models:\n"
    << "  - name: " << kModel << "\n"
    << "    replicas:\n"
    << "      data_parallel: { url: http://127.0.0.1:" << sim_port << ", size: 2 }\n";
  return config;
}

struct WardenOverSim {
  explicit WardenOverSim(const TempDir& dir, const std::string& top = "")
      : sim({WARDEN_BINARY, "sim", "--port", "0", "--data-parallel-size", "2", "--preset", "a4000-qwen3-4b",
             "--served-model-name", kModel, "--time-scale", "20"}),
        sim_port(sim.wait_for_port()),
        warden({WARDEN_BINARY, "serve", "--config", warden_config(dir, sim_port, top)}),
        url("http://127.0.0.1:" + std::to_string(warden.wait_for_port())) {}
  ChildProcess sim;
  int sim_port;
  ChildProcess warden;
  std::string url;
};

TEST(BenchAgentic, AgentsThroughAWardenFillTheTaskColumns) {
  TempDir dir;
  WardenOverSim served(dir);
  const std::string& url = served.url;
  const int sim_port = served.sim_port;
  const std::string out = dir.file("out.json");
  ChildProcess bench({WARDEN_BINARY,  "bench",
                      "--url",        url,
                      "--model",      kModel,
                      "--workload",   "agentic",
                      "--metrics",    "http://127.0.0.1:" + std::to_string(sim_port) + "/metrics",
                      "--levels",     "2",
                      "--duration",   "150s",
                      "--max-output", "16",
                      "--time-scale", "20",
                      "--seed",       "3",
                      "--records",    dir.file("records.jsonl"),
                      "--out",        out});
  const std::optional<int> code = bench.wait_exit(std::chrono::seconds(120));
  ASSERT_TRUE(code.has_value()) << "bench did not finish; stderr:\n" << bench.stderr_text();
  ASSERT_EQ(*code, 0) << bench.stderr_text();
  auto rep = report::parse_json(slurp(out));
  ASSERT_TRUE(rep.has_value()) << rep.error();
  ASSERT_EQ(rep->rows.size(), 1U);
  const report::Row& r = rep->rows[0];
  EXPECT_EQ(r.errors, 0);
  ASSERT_TRUE(r.tasks_per_hour && r.task_time_p50 && r.task_time_p95) << bench.stderr_text();
  EXPECT_GT(*r.tasks_per_hour, 0.0);
  EXPECT_GE(*r.task_time_p95, *r.task_time_p50);
  ASSERT_TRUE(r.prefix_hits.has_value());
  EXPECT_GT(*r.prefix_hits, 0.0);  // tool rounds resend the thread's history
  EXPECT_EQ(rep->meta.at("workload").at("preset").as_string(), "agentic");
  EXPECT_NE(bench.stdout_text().find("tasks/h"), std::string::npos) << bench.stdout_text();
  // Several requests per task: each task-ending record started after its task did.
  std::istringstream records(slurp(dir.file("records.jsonl")));
  std::string line;
  std::size_t requests = 0;
  std::size_t tasks = 0;
  while (std::getline(records, line)) {
    const boost::json::object o = boost::json::parse(line).as_object();
    ++requests;
    if (const auto* started = o.if_contains("task_started_at")) {
      ++tasks;
      EXPECT_LE(started->to_number<double>(), o.at("started_at").to_number<double>());
    }
  }
  EXPECT_GT(tasks, 0U);
  EXPECT_GT(requests, 2 * tasks);
}

// A mixed workload: headless agents of two tenants (each sending its tenant in a header the warden reads)
// and an interactive session (Claude Code's interactive entrypoint in its billing line). The warden names
// each request's class and tenant in its log; bench reports each group's tasks and task starts.
TEST(BenchAgentic, AMixedWorkloadReportsEachClassAndTenant) {
  TempDir dir;
  WardenOverSim served(dir, "clients: { tenant_header: x-team }\n");
  const std::string& url = served.url;
  const std::string out = dir.file("out.json");
  ChildProcess bench({WARDEN_BINARY,
                      "bench",
                      "--url",
                      url,
                      "--model",
                      kModel,
                      "--workload",
                      "agentic",
                      "--levels",
                      "4",
                      "--duration",
                      "150s",
                      "--max-output",
                      "16",
                      "--time-scale",
                      "20",
                      "--seed",
                      "3",
                      "--interactive",
                      "1",
                      "--interactive-think-time",
                      "10s",
                      "--tenants",
                      "1,1",
                      "--tenant-header",
                      "x-team",
                      "--out",
                      out});
  const std::optional<int> code = bench.wait_exit(std::chrono::seconds(150));
  ASSERT_TRUE(code.has_value()) << "bench did not finish; stderr:\n" << bench.stderr_text();
  ASSERT_EQ(*code, 0) << bench.stderr_text();
  auto rep = report::parse_json(slurp(out));
  ASSERT_TRUE(rep.has_value()) << rep.error();
  const boost::json::array& groups = rep->meta.at("groups").as_array();
  ASSERT_EQ(groups.size(), 3U) << boost::json::serialize(rep->meta);
  const std::vector<std::pair<std::string, std::int64_t>> expected{
      {"tenant 1", 2}, {"tenant 2", 2}, {"interactive", 1}};
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const boost::json::object& g = groups[i].as_object();
    EXPECT_EQ(g.at("group").as_string(), expected[i].first);
    EXPECT_EQ(g.at("agents").to_number<std::int64_t>(), expected[i].second);
    EXPECT_GT(g.at("task_starts").to_number<std::int64_t>(), 0) << boost::json::serialize(g);
  }
  EXPECT_NE(bench.stdout_text().find("By class of work and tenant"), std::string::npos)
      << bench.stdout_text();
  const std::string log = served.warden.stderr_text();
  EXPECT_NE(log.find("class=interactive"), std::string::npos);
  EXPECT_NE(log.find("class=headless tenant=tenant-1"), std::string::npos);
  EXPECT_NE(log.find("class=headless tenant=tenant-2"), std::string::npos);
}

}  // namespace
}  // namespace warden::bench
