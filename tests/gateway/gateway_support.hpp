// Helpers for the gateway's integration tests: real `lm-warden sim` and `lm-warden serve` processes on
// 127.0.0.1 with port 0, a temporary config and state directory, and JSON/metrics readers.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "protocol/error_body.hpp"
#include "protocol/prometheus.hpp"
#include "support/child_process.hpp"
#include "support/http.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"

namespace gateway_test {

using test_support::ChildProcess;
using test_support::Client;
using test_support::wait_until;

inline const std::string kServed = "Qwen/Qwen3-4B-Instruct-2507";

using test_support::TempDir;

// OpenAI errors: {"error":{"message","type",...}} with the type of protocol's one table for the status;
// Anthropic: {"type":"error","error":{"type","message"}}.
inline void expect_openai_error(const warden::net::SyncResponse& r, unsigned status) {
  EXPECT_EQ(r.status, status) << r.body;
  auto v = boost::json::parse(r.body).as_object();
  EXPECT_FALSE(v.contains("type")) << r.body;
  EXPECT_TRUE(v.at("error").at("message").is_string()) << r.body;
  EXPECT_EQ(std::string_view(v.at("error").at("type").as_string()),
            warden::protocol::openai_error_type(static_cast<int>(r.status)))
      << r.body;
}

inline void expect_anthropic_error(const warden::net::SyncResponse& r, unsigned status) {
  EXPECT_EQ(r.status, status) << r.body;
  auto v = boost::json::parse(r.body).as_object();
  EXPECT_EQ(v.at("type").as_string(), "error") << r.body;
  EXPECT_TRUE(v.at("error").at("type").is_string()) << r.body;
  EXPECT_TRUE(v.at("error").at("message").is_string()) << r.body;
}

// The JSON body of a raw HTTP response (what follows the header).
inline boost::json::object raw_json(const std::string& raw) {
  const auto at = raw.find("\r\n\r\n");
  return boost::json::parse(at == std::string::npos ? "" : raw.substr(at + 4)).as_object();
}

// A raw HTTP response with `status`, an error body in Anthropic's shape or OpenAI's, and the connection
// closed after it (raw_exchange returned because the server closed).
inline void expect_raw_error(const std::string& raw, int status, bool anthropic) {
  EXPECT_EQ(test_support::raw_status(raw), status) << raw;
  EXPECT_NE(raw.find("\r\nConnection: close\r\n"), std::string::npos) << raw;
  boost::json::object v;
  try {
    v = raw_json(raw);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "body is not a JSON object: " << e.what() << "\n" << raw;
    return;
  }
  EXPECT_EQ(v.contains("type"), anthropic) << raw;
  if (anthropic && v.contains("type")) {
    EXPECT_EQ(v.at("type").as_string(), "error") << raw;
  }
  ASSERT_TRUE(v.contains("error") && v.at("error").is_object()) << raw;
  EXPECT_TRUE(v.at("error").at("message").is_string()) << raw;
  const auto* type = v.at("error").as_object().if_contains("type");
  EXPECT_TRUE(type != nullptr && type->is_string()) << raw;
  if (!anthropic && type != nullptr && type->is_string()) {
    EXPECT_EQ(std::string_view(type->as_string()), warden::protocol::openai_error_type(status)) << raw;
  }
}

// `lm-warden sim` with N ranks. `time_scale` < 1 slows the instant preset down so generations stay in
// flight long enough to observe (0.005 → about 20 ms per output token). `extra`: more sim options.
inline std::unique_ptr<ChildProcess> start_sim(int dp, double time_scale = 1.0, int port = 0,
                                               const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{WARDEN_BINARY,
                                "sim",
                                "--port",
                                std::to_string(port),
                                "--data-parallel-size",
                                std::to_string(dp),
                                "--preset",
                                "instant",
                                "--time-scale",
                                std::to_string(time_scale),
                                "--served-model-name",
                                kServed,
                                "--log-level",
                                "warn"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto p = std::make_unique<ChildProcess>(std::move(args));
  p->wait_for_port();
  return p;
}

// `lm-warden serve` with `models_yaml` (the text after "models:") and extra top-level lines.
struct Warden {
  TempDir dir;
  std::unique_ptr<ChildProcess> proc;
  int port = 0;

  Warden(const std::string& models_yaml, const std::string& extra = "", const std::string& state_dir = "") {
    start(models_yaml, extra, state_dir);
  }
  void start(const std::string& models_yaml, const std::string& extra = "",
             const std::string& state_dir = "") {
    const auto cfg = dir.path / "warden.yaml";
    // `extra` may bring its own metrics: section instead of the fast default.
    const bool own_metrics = extra.find("metrics:") != std::string::npos;
    std::ofstream(cfg)
        << "admin_token: secret\n"
        << (own_metrics ? ""
                        : "metrics: { scrape_interval: 100ms, scrape_timeout: 500ms, unhealthy_after: 2 }\n")
        << extra << "models:\n"
        << models_yaml;
    proc = std::make_unique<ChildProcess>(std::vector<std::string>{
        WARDEN_BINARY, "serve", "--config", cfg.string(), "--listen", "127.0.0.1:0", "--state-dir",
        state_dir.empty() ? (dir.path / "state").string() : state_dir, "--log-level", "warn"});
    port = proc->wait_for_port();
  }
};

inline std::string dp_model(int sim_port, int size,
                            const std::string& routing = "{ affinity: true, spill_threshold: 8 }",
                            const std::string& name = "m") {
  return "  - name: " + name + "\n    served_model_name: " + kServed +
         "\n    max_num_seqs: 32\n    routing: " + routing +
         "\n    replicas: { data_parallel: { url: http://127.0.0.1:" + std::to_string(sim_port) +
         ", size: " + std::to_string(size) + " } }\n";
}

inline std::string chat_body(const std::string& text, int max_tokens = 4, bool stream = true,
                             const std::string& model = "m") {
  boost::json::object o{
      {"model", model},
      {"max_tokens", max_tokens},
      {"stream", stream},
      {"messages", boost::json::array{boost::json::object{{"role", "user"}, {"content", text}}}}};
  return boost::json::serialize(o);
}

// A chat request of `bytes` bytes: JSON whitespace pads it (the prompt itself stays short).
inline std::string padded_chat_body(std::size_t bytes, bool stream) {
  std::string body = chat_body("hello", 4, stream);
  body.insert(body.size() - 1, std::string(bytes > body.size() ? bytes - body.size() : 0, ' '));
  return body;
}

// A raw HTTP/1.1 POST on its own socket, read as it arrives.
class RawStream {
 public:
  explicit RawStream(int port) : fd_(test_support::raw_connect(port)) {}
  RawStream(int port, const std::string& target, const std::string& body) : RawStream(port) {
    send("POST " + target +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "anthropic-version: 2023-06-01\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  ~RawStream() { ::close(fd_); }
  RawStream(const RawStream&) = delete;
  RawStream& operator=(const RawStream&) = delete;
  void send(std::string_view bytes) { ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  // Reads until `needle` arrived (true) or the peer closed / `timeout` passed with nothing new (false).
  bool read_until(std::string_view needle, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    while (needle.empty() || received_.find(needle) == std::string::npos) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) {
        return false;
      }
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        return false;
      }
      received_.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
  const std::string& received() const { return received_; }
  bool closed() const { return closed_; }

 private:
  int fd_;
  std::string received_;
  bool closed_ = false;
};

inline boost::json::value json_of(const warden::net::SyncResponse& r) {
  return boost::json::parse(r.body);
}

inline boost::json::object card(int warden_port, const std::string& model = "m") {
  Client c(warden_port);
  auto r = c.get("/api/models/" + model);
  return boost::json::parse(r.body).as_object();
}

inline const boost::json::object& replica_of(const boost::json::object& card, int i) {
  return card.at("routing").at("replicas").as_array().at(static_cast<std::size_t>(i)).as_object();
}

inline std::int64_t num(const boost::json::value& v) {
  return v.to_number<std::int64_t>();
}

// The value of one series (name and labels exactly as rendered) in the warden's /metrics; 0 if absent.
inline double metric_value(int port, const std::string& series) {
  Client c(port);
  const std::string text = c.get("/metrics", {{"Authorization", "Bearer secret"}}).body;
  const auto at = text.find(series + " ");
  return at == std::string::npos ? 0 : std::stod(text.substr(at + series.size() + 1));
}

// A field of a process's /proc/PID/status in KiB ("VmRSS", "VmHWM"); 0 if unknown.
inline long proc_status_kib(pid_t pid, std::string_view field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(field) && line.size() > field.size() && line[field.size()] == ':') {
      return std::stol(line.substr(field.size() + 1));
    }
  }
  return 0;
}

// vllm:num_requests_running of one rank as the sim reports it.
inline double sim_running(int sim_port, int rank) {
  Client c(sim_port);
  auto r = c.get("/metrics");
  auto s = warden::protocol::parse_vllm_metrics(r.body);
  if (!s) {
    return -1;
  }
  const auto* k = s->rank(rank);
  return k && k->num_requests_running ? *k->num_requests_running : 0;
}

// A streaming request on its own thread that stays open until release(): it keeps a request in flight
// at the warden (and the engine) for as long as the test needs, then hangs up like a client that leaves.
class HeldStream {
 public:
  HeldStream(int port, std::string body, warden::net::Headers headers,
             std::string target = "/v1/chat/completions") {
    thread_ = std::thread([this, port, body = std::move(body), headers = std::move(headers), target] {
      Client c(port);
      auto r = c.raw().post(target, body, headers, [this](std::string_view) {
        std::unique_lock lock(mu_);
        started_ = true;
        cv_.notify_all();
        cv_.wait(lock, [this] { return released_; });
        return false;  // hang up
      });
      std::lock_guard lock(mu_);
      if (r) {
        response_ = std::move(*r);
      }
      started_ = true;
      finished_ = true;
      cv_.notify_all();
    });
  }
  ~HeldStream() {
    release();
    thread_.join();
  }
  // Waits until the first body bytes arrived (the request was routed and the engine answered).
  bool wait_started(std::chrono::seconds timeout = std::chrono::seconds(20)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return started_; }) && !finished_;
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // The response (headers) once the thread finished.
  warden::net::SyncResponse finish() {
    release();
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return finished_; });
    return response_;
  }

 private:
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  bool released_ = false;
  bool finished_ = false;
  warden::net::SyncResponse response_;
};

}  // namespace gateway_test
