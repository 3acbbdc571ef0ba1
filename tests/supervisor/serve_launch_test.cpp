// `lm-warden serve` launching its engines (real processes on 127.0.0.1): two sims started by the warden,
// one SIGKILLed → its replica is unhealthy at once, traffic goes to the other, the engine is restarted and
// traffic returns; a command that fails at once shows `failed` with its last lines; SIGTERM and SIGKILL
// of the warden leave no engine process behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "supervisor/supervisor_support.hpp"
#include "support/child_process.hpp"
#include "support/http.hpp"

namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using supervisor_test::free_port;
using supervisor_test::process_alive;
using supervisor_test::wait_until;

// No live process left in the group `pgid` (engines are group leaders; zombies do not count).
bool group_gone(int pgid) {
  return !supervisor_test::group_alive(pgid);
}

class ServeLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("warden-launch-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    serve_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string block_file(int replica) const { return (dir_ / ("block-" + std::to_string(replica))).string(); }

  // Two sims of model "m" (urls mode, one process each) plus optional extra YAML models.
  std::string two_sims_config(const std::string& extra = "") {
    ports_ = {free_port(), free_port()};
    std::string c =
        "listen: 127.0.0.1:0\nstate_dir: " + (dir_ / "state").string() +
        "\nmetrics: { scrape_interval: 100ms, unhealthy_after: 3 }\nmodels:\n"
        "  - name: m\n    served_model_name: served\n    max_num_seqs: 8\n    replicas:\n"
        "      urls: [http://127.0.0.1:" +
        std::to_string(ports_[0]) + ", http://127.0.0.1:" + std::to_string(ports_[1]) +
        "]\n    launch:\n"
        // A start fails while the replica's block file exists: the test decides when it returns.
        "      command: [/bin/sh, -c, 'if [ -e " +
        (dir_ / "block-${REPLICA}").string() +
        " ]; then echo blocked >&2; exit 1; fi; exec \"${WARDEN_BINARY}\" sim --port ${PORT} "
        "--preset instant --served-model-name ${SERVED_MODEL_NAME}']\n"
        "      health_timeout: 30s\n      stop_grace: 2s\n"
        "      restart: { initial_backoff: 50ms, max_backoff: 200ms, max_start_failures: 1000 }\n" +
        extra;
    return c;
  }

  int start_serve(const std::string& config) {
    const auto path = (dir_ / "warden.yaml").string();
    std::ofstream(path) << config;
    serve_ = std::make_unique<test_support::ChildProcess>(
        std::vector<std::string>{WARDEN_BINARY, "serve", "--config", path, "--log-level", "debug"});
    return serve_->wait_for_port();
  }

  json::object model(int port, const std::string& name) {
    test_support::Client c(port);
    auto r = c.get("/api/models/" + name);
    EXPECT_EQ(r.status, 200u) << r.body;
    return json::parse(r.body).as_object();
  }
  static const json::object& engine(const json::object& card, std::size_t i) {
    return card.at("launch").at("engines").as_array().at(i).as_object();
  }
  static bool replica_healthy(const json::object& card, std::size_t i) {
    return card.at("routing").at("replicas").as_array().at(i).at("healthy").as_bool();
  }
  static int pid_of(const json::object& card, std::size_t i) {
    const auto& p = engine(card, i).at("pid");
    return p.is_int64() ? static_cast<int>(p.as_int64()) : 0;
  }

  // All engines of model m ready and both replicas healthy; returns their pids.
  std::vector<int> wait_ready(int port) {
    std::vector<int> pids;
    EXPECT_TRUE(wait_until([&] {
      auto card = model(port, "m");
      if (card.at("launch").at("status").as_string() != "ready" || !replica_healthy(card, 0) ||
          !replica_healthy(card, 1)) {
        return false;
      }
      pids = {pid_of(card, 0), pid_of(card, 1)};
      return true;
    })) << serve_->stderr_text();
    return pids;
  }

  // One chat request of a new conversation; returns (status, replica).
  std::pair<unsigned, int> chat(int port, const std::string& session,
                                const warden::net::Headers& extra = {}) {
    test_support::Client c(port);
    warden::net::Headers h = {{"X-Warden-Session", session}};
    h.insert(h.end(), extra.begin(), extra.end());
    auto r = c.post(
        "/v1/chat/completions",
        R"({"model":"m","max_tokens":4,"messages":[{"role":"user","content":"hi )" + session + R"("}]})", h);
    const std::string rep = r.header("x-warden-replica");
    return {r.status, rep.empty() ? -1 : std::stoi(rep)};
  }

  std::filesystem::path dir_;
  std::vector<int> ports_;
  std::unique_ptr<test_support::ChildProcess> serve_;
  static inline int counter_ = 0;
};

TEST_F(ServeLaunch, KilledSimIsRoutedAroundRestartedAndTrafficReturns) {
  const int port = start_serve(two_sims_config());
  const auto pids = wait_ready(port);
  ASSERT_EQ(pids.size(), 2u);
  ASSERT_GT(pids[1], 0);
  {
    auto card = model(port, "m");
    EXPECT_NE(engine(card, 1).at("command").as_string().find("sim --port " + std::to_string(ports_[1])),
              std::string::npos);
    EXPECT_EQ(engine(card, 1).at("replicas").as_array().at(0).as_int64(), 1);
  }

  // Keep replica 1 down after the kill until the test says so.
  std::ofstream(block_file(1)) << "";
  ::kill(pids[1], SIGKILL);
  ASSERT_TRUE(wait_until([&] {
    auto card = model(port, "m");
    return !replica_healthy(card, 1) && engine(card, 1).at("state").as_string() == "restarting";
  })) << serve_->stderr_text();
  {
    auto card = model(port, "m");
    EXPECT_EQ(card.at("launch").at("status").as_string(), "restarting");
    EXPECT_TRUE(replica_healthy(card, 0));
    const auto err = card.at("routing").at("replicas").as_array().at(1).at("last_error");
    EXPECT_NE(json::serialize(err).find("killed by signal 9"), std::string::npos) << err;
  }
  // Every new conversation goes to replica 0 and succeeds while replica 1 is down.
  for (int i = 0; i < 6; ++i) {
    auto [status, replica] = chat(port, "down-" + std::to_string(i));
    EXPECT_EQ(status, 200u);
    EXPECT_EQ(replica, 0);
  }
  ASSERT_TRUE(wait_until([&] {
    // A start that found the block file said so on stderr (the command line itself also says "blocked").
    auto logs = json::parse(test_support::Client(port).get("/api/models/m/logs?lines=50").body);
    for (const auto& l : logs.at("engines").at(1).at("lines").as_array()) {
      if (l.at("stream").as_string() == "stderr" && l.at("text").as_string() == "blocked") {
        return true;
      }
    }
    return false;
  }));

  std::filesystem::remove(block_file(1));
  int new_pid = 0;
  ASSERT_TRUE(wait_until([&] {
    auto card = model(port, "m");
    new_pid = pid_of(card, 1);
    return engine(card, 1).at("state").as_string() == "ready" && replica_healthy(card, 1);
  })) << serve_->stderr_text();
  EXPECT_NE(new_pid, pids[1]);
  EXPECT_FALSE(process_alive(pids[1]));
  EXPECT_GE(engine(model(port, "m"), 1).at("restarts").as_int64(), 2);  // the blocked starts count too
  // Traffic returns: new conversations are placed on replica 1 again, and it serves them.
  bool landed = false;
  for (int i = 0; i < 20 && !landed; ++i) {
    auto [status, replica] = chat(port, "back-" + std::to_string(i));
    EXPECT_EQ(status, 200u);
    landed = replica == 1;
  }
  EXPECT_TRUE(landed);
  EXPECT_EQ(chat(port, "pinned", {{"X-Warden-Replica", "1"}}), (std::pair<unsigned, int>{200u, 1}));
}

TEST_F(ServeLaunch, CommandThatFailsAtOnceIsFailedWithItsLastLines) {
  const int port = start_serve(two_sims_config(
      "  - name: broken\n    replicas:\n      urls: [http://127.0.0.1:" + std::to_string(free_port()) +
      "]\n    launch:\n      command: [/bin/sh, -c, 'echo loading weights; echo \"error: CUDA out of "
      "memory\" "
      ">&2; exit 2']\n      restart: { initial_backoff: 50ms }\n"));
  json::object card;
  ASSERT_TRUE(wait_until([&] {
    card = model(port, "broken");
    return card.at("launch").at("status").as_string() == "failed";
  })) << serve_->stderr_text();
  const std::string reason(card.at("launch").at("status_reason").as_string());
  EXPECT_NE(reason.find("exited with status 2"), std::string::npos) << reason;
  EXPECT_NE(reason.find("gave up after 3 starts"), std::string::npos) << reason;
  const auto& tail = card.at("launch").at("log_tail").as_array();
  ASSERT_GE(tail.size(), 3u);
  EXPECT_EQ(tail.at(tail.size() - 1).as_string(), "exited with status 2");
  EXPECT_EQ(tail.at(tail.size() - 2).as_string(), "error: CUDA out of memory");
  EXPECT_FALSE(replica_healthy(card, 0));

  // The same in the list, the logs endpoint (with streams), and requests get a clean 503.
  test_support::Client c(port);
  auto list = json::parse(c.get("/api/models").body).as_object();
  std::set<std::string> statuses;
  for (const auto& m : list.at("models").as_array()) {
    statuses.insert(std::string(m.at("launch").at("status").as_string()));
  }
  EXPECT_TRUE(statuses.count("failed"));
  auto logs = c.get("/api/models/broken/logs?lines=3");
  ASSERT_EQ(logs.status, 200u);
  auto lines = json::parse(logs.body).at("engines").at(0).at("lines").as_array();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines.at(1).at("stream").as_string(), "stderr");
  EXPECT_EQ(lines.at(1).at("text").as_string(), "error: CUDA out of memory");
  EXPECT_EQ(c.get("/api/models/broken/logs?lines=0").status, 400u);
  EXPECT_EQ(c.get("/api/models/nope/logs").status, 404u);
  auto r = c.post("/v1/chat/completions", R"({"model":"broken","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(r.status, 503u) << r.body;
  // The healthy model next to it is unaffected.
  wait_ready(port);
}

TEST_F(ServeLaunch, SigtermOfTheWardenStopsEveryEngine) {
  const int port = start_serve(two_sims_config());
  const auto pids = wait_ready(port);
  ASSERT_EQ(pids.size(), 2u);
  for (int pid : pids) {
    ASSERT_FALSE(group_gone(pid)) << pid;  // the check below can see a live group
  }
  EXPECT_EQ(serve_->stop(10s), 0);
  for (int pid : pids) {
    EXPECT_TRUE(group_gone(pid)) << pid;  // reaped by the warden before it exited
  }
  EXPECT_NE(serve_->stderr_text().find("engine m[1]: stopped"), std::string::npos);
}

TEST_F(ServeLaunch, SigkillOfTheWardenTakesEveryEngineWithIt) {
  const int port = start_serve(two_sims_config());
  const auto pids = wait_ready(port);
  ASSERT_EQ(pids.size(), 2u);
  serve_->signal(SIGKILL);
  ASSERT_TRUE(serve_->wait_exit(10s));
  for (int pid : pids) {
    EXPECT_TRUE(wait_until([&] { return group_gone(pid); })) << pid;
  }
}

// `engine: vllm` end to end: a stand-in `vllm` (a script) records the generated argv and runs the sim with
// the flags the sim shares with vLLM, so the warden's DP4 model is served by what the vllm launcher built.
TEST_F(ServeLaunch, VllmEngineRunsTheGeneratedCommandLine) {
  const auto fake = (dir_ / "vllm").string();
  const auto argv_file = (dir_ / "vllm-argv.txt").string();
  std::ofstream(fake)
      << "#!/bin/sh\nprintf '%s\\n' \"$@\" > " << argv_file
      << "\n[ \"$1\" = serve ] || exit 64\nshift 2\nout=\"\"\n"
         "while [ $# -gt 0 ]; do\n  case \"$1\" in\n"
         "    --tensor-parallel-size) shift 2 ;;\n    --enable-prompt-tokens-details) shift ;;\n"
         "    *) out=\"$out $1\"; shift ;;\n  esac\ndone\n"
         "exec \"$WARDEN_BIN\" sim $out --preset instant\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  const int sim_port = free_port();
  const int port = start_serve(
      "listen: 127.0.0.1:0\nstate_dir: " + (dir_ / "state").string() +
      "\nmetrics: { scrape_interval: 100ms }\nmodels:\n"
      "  - name: qwen3-4b-dp4\n    served_model_name: Qwen/Qwen3-4B-Instruct-2507\n"
      "    max_num_seqs: 32\n    replicas:\n      data_parallel: { url: http://127.0.0.1:" +
      std::to_string(sim_port) + ", size: 4 }\n    launch:\n      engine: vllm\n      executable: " + fake +
      "\n      env: { WARDEN_BIN: \"${WARDEN_BINARY}\" }\n      health_timeout: 30s\n");
  json::object card;
  ASSERT_TRUE(wait_until([&] {
    card = model(port, "qwen3-4b-dp4");
    return card.at("launch").at("status").as_string() == "ready" &&
           card.at("healthy_replicas").as_int64() == 4;
  })) << serve_->stderr_text();
  std::ifstream in(argv_file);
  std::vector<std::string> argv;
  for (std::string line; std::getline(in, line);) {
    argv.push_back(line);
  }
  // The golden line, then the KV cache events the warden listens to on ports it picked.
  const auto expected = supervisor_test::golden_dp4_vllm_args(std::to_string(sim_port));
  ASSERT_EQ(argv.size(), expected.size() + 2);
  EXPECT_EQ(
      std::vector<std::string>(argv.begin(), argv.begin() + static_cast<std::ptrdiff_t>(expected.size())),
      expected);
  EXPECT_EQ(argv[expected.size()], "--kv-events-config");
  EXPECT_TRUE(
      argv.back().starts_with(R"({"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:)"))
      << argv.back();
  EXPECT_EQ(engine(card, 0).at("replicas").as_array().size(), 4u);
  test_support::Client c(port);
  auto r = c.post("/v1/chat/completions",
                  R"({"model":"qwen3-4b-dp4","max_tokens":4,"messages":[{"role":"user","content":"hi"}]})",
                  {{"X-Warden-Replica", "3"}});
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.header("x-warden-replica"), "3");
}

TEST_F(ServeLaunch, SecretsOfALaunchedEngineNeverShowInTheApiOrTheLogs) {
  // An engine that prints its arguments and its token, as vLLM prints its non-default args.
  const auto script = (dir_ / "engine.sh").string();
  std::ofstream(script)
      << "#!/bin/sh\necho \"engine args: $*\"\necho \"token: $HF_TOKEN\" >&2\n"
         "exec \"$WARDEN_BIN\" sim --port \"$2\" --preset instant --served-model-name served\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const int sim_port = free_port();
  const int port = start_serve("listen: 127.0.0.1:0\nstate_dir: " + (dir_ / "state").string() +
                               "\nmetrics: { scrape_interval: 100ms }\nmodels:\n"
                               "  - name: m\n    served_model_name: served\n    replicas:\n"
                               "      urls: [http://127.0.0.1:" +
                               std::to_string(sim_port) + "]\n    launch:\n      command: [" + script +
                               ", --port, \"${PORT}\", --api-key, sekret, --hf-token=hf-sekret]\n"
                               "      env: { WARDEN_BIN: \"${WARDEN_BINARY}\", HF_TOKEN: env-sekret }\n"
                               "      health_timeout: 30s\n");
  json::object card;
  ASSERT_TRUE(wait_until([&] {
    card = model(port, "m");
    return card.at("launch").at("status").as_string() == "ready";
  })) << serve_->stderr_text();
  test_support::Client c(port);
  // The engine's own lines are in the ring once they were read: wait for the second one.
  std::string logs;
  ASSERT_TRUE(wait_until([&] {
    logs = c.get("/api/models/m/logs").body;
    return logs.find("token: ") != std::string::npos;
  })) << logs;
  const std::string models = c.get("/api/models").body;
  const std::string command(engine(card, 0).at("command").as_string());
  EXPECT_TRUE(command.ends_with("--api-key *** --hf-token=***")) << command;
  EXPECT_NE(command.find("HF_TOKEN=***"), std::string::npos) << command;
  EXPECT_NE(logs.find("engine args: --port " + std::to_string(sim_port) + " --api-key *** --hf-token=***"),
            std::string::npos)
      << logs;
  EXPECT_NE(logs.find("token: ***"), std::string::npos) << logs;
  for (const std::string& text : {models, logs, serve_->stderr_text()}) {
    EXPECT_EQ(text.find("sekret"), std::string::npos) << text;
  }
}

TEST_F(ServeLaunch, BadLaunchSectionIsAConfigurationError) {
  const auto path = (dir_ / "bad.yaml").string();
  std::ofstream(path) << "models:\n  - name: m\n    replicas: { urls: [http://127.0.0.1:9] }\n"
                         "    launch: { command: [], engine: vllm, colour: red }\n";
  test_support::ChildProcess serve({WARDEN_BINARY, "serve", "--config", path});
  EXPECT_EQ(serve.wait_exit(20s), 2);
  const std::string err = serve.stderr_text();
  EXPECT_NE(err.find("bad.yaml:4:24: models[0].launch.command must be a non-empty list"), std::string::npos)
      << err;
  EXPECT_NE(err.find("unknown key 'colour' in models[0].launch"), std::string::npos) << err;
}

}  // namespace
