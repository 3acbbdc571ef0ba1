// The warden listens to its replicas' KV cache events, through real processes on 127.0.0.1: a publisher
// written in Python from vLLM's wire format (tests/gateway/subscriber/vllm_kv_publisher.py, both
// encodings, malformed payloads, unknown fields, a replay socket), `lm-warden sim --kv-events-config` as
// vLLM's stand-in, and engines the warden launches itself. The model card and /metrics say which replicas
// are exact; gaps are replayed, a restart clears, a dead publisher falls back within seconds.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "gateway/engine_stand_ins.hpp"
#include "gateway/gateway_support.hpp"
#include "supervisor/free_ports.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

namespace {

// The Python publisher (Debian's python3, with python3-zmq and python3-msgpack), driven line by line.
class PythonPublisher {
 public:
  PythonPublisher(int port, int replay_port) {
    proc_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        "/usr/bin/python3", WARDEN_SOURCE_DIR "/tests/gateway/subscriber/vllm_kv_publisher.py",
        "tcp://127.0.0.1:" + std::to_string(port), "tcp://127.0.0.1:" + std::to_string(replay_port),
        dir_.path.string()});
  }
  // Runs one command of the script (its docstring) and waits until it is done.
  void run(const std::string& command) {
    std::ofstream(dir_.path / "commands", std::ios::app) << command << "\n";
    ++sent_;
    ASSERT_TRUE(wait_until([&] { return done() >= sent_; })) << proc_->stderr_text();
  }
  void kill() { proc_->stop(0ms); }

 private:
  int done() const {
    std::ifstream in(dir_.path / "done");
    int n = 0;
    in >> n;
    return n;
  }

  TempDir dir_;
  std::unique_ptr<ChildProcess> proc_;
  int sent_ = 0;
};

int free_ports(int count) {
  const auto first = warden::supervisor::free_port_run(count);
  EXPECT_TRUE(first.has_value());
  return first.value_or(0);
}

boost::json::value kv_of(int warden_port, int replica) {
  return replica_of(card(warden_port), replica).at("kv_events");
}

bool live(int warden_port, int replica) {
  const auto kv = kv_of(warden_port, replica);
  return kv.is_object() && kv.at("live").as_bool();
}

std::int64_t kv_num(int warden_port, int replica, const char* key) {
  return num(kv_of(warden_port, replica).at(key));
}

double kv_metric(int warden_port, const std::string& name) {
  return metric_value(warden_port, name + R"({model="m",replica="0"})");
}

// A replica served by an engine stand-in, its events by the Python publisher.
struct PublisherSetup {
  FaultyEngine engine{FaultyEngine::Fault::none, kServed};
  int ports = free_ports(2);
  PythonPublisher publisher{ports, ports + 1};
  Warden warden{"  - name: m\n    served_model_name: " + kServed +
                "\n    replicas: { urls: [http://127.0.0.1:" + std::to_string(engine.port()) +
                "] }\n    kv_events: { endpoint: tcp://127.0.0.1:" + std::to_string(ports) +
                ", replay_endpoint: tcp://127.0.0.1:" + std::to_string(ports + 1) +
                ", replay_timeout: 1s }\n"};

  // The publisher's first batches, until the warden is connected and exact (what it sent before it
  // connected, a slow joiner, comes by the replay).
  void go_live() {
    ASSERT_TRUE(wait_until([&] { return kv_of(warden.port, 0).is_object(); }));
    ASSERT_TRUE(wait_until([&] { return kv_of(warden.port, 0).at("connected").as_bool(); }));
    publisher.run("batch map s1 3");
    publisher.run("batch array s2 2");
    ASSERT_TRUE(wait_until([&] {
      return live(warden.port, 0) && kv_num(warden.port, 0, "resident_tokens") == 80;
    })) << boost::json::serialize(kv_of(warden.port, 0));
  }
};

}  // namespace

TEST(GatewayKvEvents, APythonPublisherInBothEncodingsMakesTheReplicaExact) {
  PublisherSetup s;
  s.go_live();
  const int w = s.warden.port;
  EXPECT_TRUE(kv_of(w, 0).at("complete").as_bool());
  EXPECT_EQ(kv_num(w, 0, "threads"), 2);
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_exact"), 1);
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_resident_tokens"), 80);

  // A store with fields and an event type vLLM may add later: the known part is applied.
  s.publisher.run("unknown map s3 2");
  s.publisher.run("unknown array s4 1");
  ASSERT_TRUE(wait_until([&] { return kv_num(w, 0, "resident_tokens") == 128; }));
  s.publisher.run("remove array s1 1");
  s.publisher.run("remove map s3 2");
  ASSERT_TRUE(wait_until([&] { return kv_num(w, 0, "resident_tokens") == 80; }));

  // Malformed and truncated payloads are counted and dropped; the stream stays exact.
  s.publisher.run("malformed");
  s.publisher.run("truncated");
  s.publisher.run("batch map s5 1");
  ASSERT_TRUE(wait_until([&] { return kv_num(w, 0, "resident_tokens") == 96; }));
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_decode_errors_total"), 2);
  EXPECT_TRUE(live(w, 0));
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_blocks_stored_total"), 3 + 2 + 2 + 1 + 1);
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_blocks_removed_total"), 3);

  s.publisher.run("cleared map");
  ASSERT_TRUE(wait_until([&] { return kv_num(w, 0, "resident_tokens") == 0; }));
  EXPECT_GT(kv_of(w, 0).at("index_bytes").to_number<double>(), 0);
}

TEST(GatewayKvEvents, AGapIsReplayedAndOneTheBufferLostClearsTheIndexIncomplete) {
  PublisherSetup s;
  s.go_live();
  const int w = s.warden.port;
  const double replays = kv_metric(w, "lm_warden_kv_replays_total");
  // Three batches published to the replay buffer only: the next live one shows the gap.
  s.publisher.run("hide 3");
  s.publisher.run("batch map after 1");
  ASSERT_TRUE(wait_until([&] { return kv_num(w, 0, "resident_tokens") == 80 + 3 * 16 + 16 && live(w, 0); }))
      << boost::json::serialize(kv_of(w, 0));
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_gaps_total"), 1);
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_replays_total"), replays + 1);
  EXPECT_TRUE(kv_of(w, 0).at("complete").as_bool());
  const double clears = kv_metric(w, "lm_warden_kv_clears_total");

  // Two sequence numbers nobody can replay: the index starts again from what comes, incomplete.
  s.publisher.run("lose 2");
  s.publisher.run("batch map later 2");
  ASSERT_TRUE(wait_until([&] { return kv_num(w, 0, "resident_tokens") == 32 && live(w, 0); }))
      << boost::json::serialize(kv_of(w, 0));
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_gaps_total"), 2);
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_clears_total"), clears + 1);
  EXPECT_FALSE(kv_of(w, 0).at("complete").as_bool());
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_index_complete"), 0);
}

TEST(GatewayKvEvents, APublisherRestartClearsTheIndexAndItIsCompleteAgain) {
  PublisherSetup s;
  s.go_live();
  const int w = s.warden.port;
  s.publisher.run("lose 1");
  s.publisher.run("batch map x 1");  // lost: incomplete
  ASSERT_TRUE(wait_until([&] { return !kv_of(w, 0).at("complete").as_bool() && live(w, 0); }));
  const double clears = kv_metric(w, "lm_warden_kv_clears_total");
  s.publisher.run("restart");
  s.publisher.run("batch array fresh 2");  // seq 0 again
  ASSERT_TRUE(wait_until([&] { return kv_of(w, 0).at("complete").as_bool(); }))
      << boost::json::serialize(kv_of(w, 0));
  EXPECT_EQ(kv_num(w, 0, "resident_tokens"), 32);
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_clears_total"), clears + 1);
  EXPECT_TRUE(live(w, 0));
}

TEST(GatewayKvEvents, ADeadPublisherFallsBackWithinSeconds) {
  PublisherSetup s;
  s.go_live();
  const int w = s.warden.port;
  s.publisher.kill();
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_until([&] { return !live(w, 0); }, 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 5s);
  EXPECT_FALSE(kv_of(w, 0).at("connected").as_bool());
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_exact"), 0);
  EXPECT_EQ(kv_metric(w, "lm_warden_kv_fallbacks_total"), 1);
}

TEST(GatewayKvEvents, TheThreadKeyReachesTheEngineAsItsSessionId) {
  FaultyEngine engine(FaultyEngine::Fault::none, kServed);
  Warden w("  - name: m\n    served_model_name: " + kServed +
           "\n    replicas: { urls: [http://127.0.0.1:" + std::to_string(engine.port()) + "] }\n");
  ASSERT_TRUE(wait_until([&] { return replica_of(card(w.port), 0).at("healthy").as_bool(); }));
  Client c(w.port);
  const auto r = c.post("/v1/chat/completions", chat_body("hello there", 4, false),
                        {{"X-Warden-Session", "conversation-1"}, {"X-Session-ID", "the-clients-own"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  const std::string head = engine.last_inference_head();
  const auto at = head.find("X-Session-ID: ");
  ASSERT_NE(at, std::string::npos) << head;
  const std::string id = head.substr(at + 14, head.find("\r\n", at) - at - 14);
  EXPECT_EQ(id.size(), 16u) << head;
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << head;
  EXPECT_EQ(head.find("the-clients-own"), std::string::npos) << head;
}

TEST(GatewayKvEvents, EventsFromASimMakeTheReplicaThatServedExact) {
  const int ports = free_ports(4);  // two ranks' publishers, then their replays
  const std::string config = R"({"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:)" +
                             std::to_string(ports) + R"(","replay_endpoint":"tcp://*:)" +
                             std::to_string(ports + 2) + R"("})";
  auto sim = start_sim(2, 1.0, 0, {"--kv-events-config", config});
  Warden w(dp_model(sim->port(), 2) + "    kv_events: { endpoint: tcp://127.0.0.1:" + std::to_string(ports) +
           ", replay_endpoint: tcp://127.0.0.1:" + std::to_string(ports + 2) + " }\n");
  ASSERT_TRUE(wait_until([&] { return kv_of(w.port, 0).is_object() && kv_of(w.port, 1).is_object(); }));
  ASSERT_TRUE(wait_until([&] {
    return kv_of(w.port, 0).at("connected").as_bool() && kv_of(w.port, 1).at("connected").as_bool();
  }));
  std::string prompt;
  for (int i = 0; i < 300; ++i) {
    prompt += "word" + std::to_string(i) + " ";
  }
  Client c(w.port);
  const auto r =
      c.post("/v1/chat/completions", chat_body(prompt, 4, false), {{"X-Warden-Session", "conversation-1"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  const int replica = std::stoi(r.header("x-warden-replica"));
  // The request's stores are published at the end of its engine step, and may reach the warden after its
  // answer: wait for them.
  ASSERT_TRUE(wait_until([&] {
    return live(w.port, replica) && kv_num(w.port, replica, "resident_tokens") > 0;
  })) << boost::json::serialize(kv_of(w.port, replica));
  EXPECT_EQ(kv_num(w.port, replica, "threads"), 1);  // the engine named the thread the warden sent
  EXPECT_TRUE(kv_of(w.port, replica).at("complete").as_bool());
  EXPECT_FALSE(kv_of(w.port, replica).at("cache_use").is_null());
  // The other rank has published nothing since it started (its replay answered nothing): known empty.
  EXPECT_TRUE(wait_until([&] { return live(w.port, 1 - replica); }));
  EXPECT_EQ(kv_num(w.port, 1 - replica, "resident_tokens"), 0);
  EXPECT_EQ(
      metric_value(w.port, "lm_warden_kv_exact{model=\"m\",replica=\"" + std::to_string(replica) + "\"}"), 1);
}

TEST(GatewayKvEvents, EnginesTheWardenLaunchesPublishWhereItListens) {
  const int http = free_ports(1);
  Warden w(
      "  - name: m\n    served_model_name: " + kServed +
      "\n    replicas: { data_parallel: { url: http://127.0.0.1:" + std::to_string(http) +
      ", size: 2 } }\n    launch:\n      command: [\"${WARDEN_BINARY}\", sim, --port, \"${PORT}\", "
      "--data-parallel-size, \"${DP_SIZE}\", --preset, instant, --served-model-name, "
      "\"${SERVED_MODEL_NAME}\", --kv-events-config, \"${KV_EVENTS_CONFIG}\"]\n      health_timeout: 20s\n");
  ASSERT_TRUE(wait_until([&] { return replica_of(card(w.port), 0).at("healthy").as_bool(); }, 30s));
  ASSERT_TRUE(wait_until([&] { return kv_of(w.port, 0).at("connected").as_bool(); }));
  std::string prompt;
  for (int i = 0; i < 300; ++i) {
    prompt += "token" + std::to_string(i) + " ";
  }
  Client c(w.port);
  const auto r = c.post("/v1/chat/completions", chat_body(prompt, 4, false), {{"X-Warden-Session", "s"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  const int replica = std::stoi(r.header("x-warden-replica"));
  // The request's stores are published at the end of its engine step, and may reach the warden after its
  // answer: wait for them.
  ASSERT_TRUE(wait_until([&] {
    return live(w.port, replica) && kv_num(w.port, replica, "resident_tokens") > 0;
  })) << boost::json::serialize(kv_of(w.port, replica));
}
