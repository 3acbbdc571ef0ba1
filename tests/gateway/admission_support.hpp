// What the admission tests share: a sim whose KV cache holds about one long conversation, a warden in
// front of it with admission configured, and readers of what the warden held.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>

#include "gateway_support.hpp"

namespace gateway_test {

// 128 blocks of 16 tokens: 2,048 tokens of KV. A long prompt (~1,200 estimated tokens) fits once.
inline std::unique_ptr<ChildProcess> start_small_sim() {
  auto p = std::make_unique<ChildProcess>(std::vector<std::string>{
      WARDEN_BINARY, "sim", "--port", "0", "--data-parallel-size", "1", "--preset", "instant",
      "--num-gpu-blocks", "128", "--served-model-name", kServed, "--log-level", "warn"});
  p->wait_for_port();
  return p;
}

inline std::string admission_model(int sim_port, const std::string& admission) {
  return dp_model(sim_port, 1, "{ affinity: true, spill_threshold: 8, admission: " + admission + " }");
}

inline std::string long_text(const std::string& word) {
  std::string text;
  while (text.size() < 4800) {
    text += word + " ";
  }
  return text;
}

inline warden::net::Headers session(const std::string& name) {
  return {{"X-Warden-Session", name}};
}

// Requests the sim started answering (its time-to-first-token histogram's count, all ranks).
inline double sim_requests(int sim_port) {
  Client c(sim_port);
  const std::string text = c.get("/metrics").body;
  const std::string name = "vllm:time_to_first_token_seconds_count{";
  double total = 0;
  for (auto at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    const auto value = text.find("} ", at);
    total += std::stod(text.substr(value + 2));
  }
  return total;
}

inline std::int64_t queued_now(int warden_port) {
  return num(card(warden_port).at("routing").at("admission").at("queued"));
}

// A warden whose model's replica reported its KV capacity, with conversation "a" resident on it.
struct AdmissionSetup {
  std::unique_ptr<ChildProcess> sim = start_small_sim();
  Warden w;

  explicit AdmissionSetup(const std::string& admission, const std::string& extra = "")
      : w(admission_model(sim->port(), admission), extra) {
    EXPECT_TRUE(wait_until([&] { return num(replica_of(card(w.port), 0).at("kv_capacity_tokens")) > 0; }));
    Client c(w.port);
    const auto first = c.post("/v1/chat/completions", chat_body(long_text("alpha"), 4, false), session("a"));
    EXPECT_EQ(first.status, 200u) << first.body;
    EXPECT_EQ(first.header("x-warden-route"), "new");
    EXPECT_EQ(first.header("x-warden-queued"), "") << "not held: it fitted";
  }
};

// A request on its own thread, answered whenever the warden lets it go.
struct Pending {
  std::optional<warden::net::SyncResponse> response;
  std::thread thread;

  Pending(int port, const std::string& target, std::string body, warden::net::Headers h) {
    thread = std::thread([this, port, target, body = std::move(body), h = std::move(h)] {
      Client c(port);
      response = c.post(target, body, h);
    });
  }
  ~Pending() {
    if (thread.joinable()) {
      thread.join();
    }
  }
  warden::net::SyncResponse get() {
    thread.join();
    return *response;
  }
};

inline double queued_header(const warden::net::SyncResponse& r) {
  const std::string v = r.header("x-warden-queued");
  EXPECT_FALSE(v.empty()) << "no X-Warden-Queued on a request that waited";
  EXPECT_EQ(v.size() - v.find('.'), 4u) << v << ": three decimals";
  return v.empty() ? -1 : std::stod(v);
}

}  // namespace gateway_test
