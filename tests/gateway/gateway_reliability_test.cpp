// What a client sees when things go wrong or get big, with real processes: `Expect: 100-continue`
// bodies get their answer, a stream an engine cuts off looks broken (not complete), SIGTERM drains the
// requests in flight, memory and body bytes are bounded, and a request without a key is refused before
// its body is read.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gateway_support.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

namespace {

// Runs a shell command and returns its stdout.
std::string run_command(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) {
    return out;
  }
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
    out.append(buf, n);
  }
  ::pclose(p);
  return out;
}

// curl's status code for a POST of `file` to the warden; `extra` adds curl options.
std::string curl_post(int port, const std::string& file, const std::string& extra = "") {
  return run_command(
      "curl -sS -o /dev/null -w '%{http_code}' --max-time 20 -H 'content-type: application/json' " + extra +
      " --data-binary @" + file + " http://127.0.0.1:" + std::to_string(port) + "/v1/chat/completions 2>&1");
}

}  // namespace

// curl sends `Expect: 100-continue` by itself for a body over 1 MiB: the warden answers 100 Continue
// itself, does not pass Expect on to the engine, and the client gets the engine's final answer.
TEST(GatewayReliability, ExpectContinueBodiesGetTheirAnswer) {
  auto sim = start_sim(2);
  Warden w(dp_model(sim->port(), 2));
  const auto big = w.dir.path / "big.json";
  std::ofstream(big) << padded_chat_body(2u << 20, false);
  EXPECT_EQ(curl_post(w.port, big.string()), "200");
  const auto small = w.dir.path / "small.json";
  std::ofstream(small) << chat_body("hello", 4, true);
  EXPECT_EQ(curl_post(w.port, small.string(), "-H 'Expect: 100-continue'"), "200");
  // The interim answer comes once, the final one after it.
  const std::string verbose = run_command(
      "curl -sS -v -o /dev/null --max-time 20 -H 'content-type: application/json' -H 'Expect: 100-continue' "
      "--data-binary @" +
      small.string() + " http://127.0.0.1:" + std::to_string(w.port) + "/v1/chat/completions 2>&1");
  std::size_t continues = 0;
  for (auto at = verbose.find("HTTP/1.1 100"); at != std::string::npos;
       at = verbose.find("HTTP/1.1 100", at + 1)) {
    ++continues;
  }
  EXPECT_EQ(continues, 1u) << verbose;
  EXPECT_NE(verbose.find("HTTP/1.1 200"), std::string::npos) << verbose;
}

// An engine that dies after the first event: the client gets an error event in its API's format and a
// chunked body without its end (and a closed connection), never a stream that looks complete.
TEST(GatewayReliability, AStreamCutOffAfterItsFirstByteIsVisiblyBroken) {
  auto openai_sim = start_sim(1, 0.005);
  auto anthropic_sim = start_sim(1, 0.005);
  Warden w(dp_model(openai_sim->port(), 1) +
           dp_model(anthropic_sim->port(), 1, "{ affinity: true, spill_threshold: 8 }", "a"));
  struct Case {
    ChildProcess* sim;
    std::string target;
    std::string body;
    std::string error_event;
  };
  const std::string anthropic_body =
      R"({"model":"a","max_tokens":400,"stream":true,"messages":[{"role":"user","content":"hello"}]})";
  for (const Case& c : {Case{openai_sim.get(), "/v1/chat/completions", chat_body("hello", 400, true),
                             "data: {\"error\":{\"message\":"},
                        Case{anthropic_sim.get(), "/v1/messages", anthropic_body,
                             "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\""}}) {
    RawStream s(w.port, c.target, c.body);
    ASSERT_TRUE(s.read_until("data: ")) << s.received();  // the stream has begun
    ::kill(c.sim->pid(), SIGKILL);
    c.sim->wait_exit(10s);
    EXPECT_FALSE(s.read_until("")) << "the connection must close";
    EXPECT_TRUE(s.closed());
    const std::string& got = s.received();
    EXPECT_NE(got.find(c.error_event), std::string::npos) << got;
    EXPECT_FALSE(got.ends_with("0\r\n\r\n")) << "the chunked body must stay unterminated:\n" << got;
    EXPECT_EQ(got.find("[DONE]"), std::string::npos) << got;
    EXPECT_EQ(got.find("message_stop"), std::string::npos) << got;
  }
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_stream_breaks_total{model="m",cause="engine"})"), 1);
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_stream_breaks_total{model="a",cause="engine"})"), 1);
}

// SIGTERM with 8 streams in flight: no new connection is accepted, /health on an open connection says
// draining, every stream finishes whole, and the warden exits well within its grace period.
TEST(GatewayReliability, SigtermDrainsTheStreamsInFlight) {
  auto sim = start_sim(2, 0.005);  // ~20 ms per token: 100 tokens stream for about 2 s
  Warden w(dp_model(sim->port(), 2), "shutdown_grace: 20s\n");
  Client health(w.port);
  ASSERT_EQ(health.get("/health").status, 200u);  // opens the keep-alive connection used below
  std::vector<std::thread> clients;
  std::atomic<int> whole{0};
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&, i] {
      Client c(w.port);
      auto r = c.post("/v1/chat/completions", chat_body("drain " + std::to_string(i), 100, true));
      if (r.status == 200 && r.body.find("data: [DONE]") != std::string::npos) {
        ++whole;
      }
    });
  }
  ASSERT_TRUE(
      wait_until([&] { return sim_running(sim->port(), 0) + sim_running(sim->port(), 1) >= 8; }, 20s));
  const auto signalled = std::chrono::steady_clock::now();
  w.proc->signal(SIGTERM);
  ASSERT_TRUE(wait_until(
      [&] {
        auto r = health.raw().get("/health");
        return r && r->status == 503 && r->body.find("draining") != std::string::npos;
      },
      5s));
  const auto code = w.proc->wait_exit(25s);
  for (auto& t : clients) {
    t.join();
  }
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  EXPECT_EQ(whole.load(), 8);
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, 20s);
}

// A second signal does not wait for the drain.
TEST(GatewayReliability, ASecondSignalStopsAtOnce) {
  auto sim = start_sim(1, 0.005);
  Warden w(dp_model(sim->port(), 1), "shutdown_grace: 60s\n");
  HeldStream held(w.port, chat_body("long", 3000, true), {});
  ASSERT_TRUE(held.wait_started());
  w.proc->signal(SIGTERM);
  EXPECT_FALSE(w.proc->wait_exit(500ms).has_value()) << "the first signal drains";
  w.proc->signal(SIGTERM);
  EXPECT_TRUE(w.proc->wait_exit(5s).has_value());
}

// A client without a key is refused from its header: the 401 comes at once although the announced body
// never arrives.
TEST(GatewayReliability, AMissingKeyIsRefusedBeforeTheBodyIsRead) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), "api_keys: [k1]\n");
  const auto started = std::chrono::steady_clock::now();
  const std::string got =
      test_support::raw_exchange(w.port,
                                 "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                 "application/json\r\nContent-Length: 30000000\r\n\r\n",
                                 10s);
  EXPECT_EQ(test_support::raw_status(got), 401) << got;
  EXPECT_NE(got.find("\"authentication_error\""), std::string::npos) << got;  // Anthropic's shape
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

// 16 concurrent 30 MB bodies: once the burst is over and the warden idle, its memory goes back to within
// twice its idle size.
TEST(GatewayReliability, MemoryReturnsAfterABurst) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), "max_inflight_body_size: 1GiB\n");
  {
    Client c(w.port);
    c.post("/v1/chat/completions", chat_body("warm up", 2, false));
  }
  ASSERT_TRUE(wait_until([&] { return proc_status_kib(w.proc->pid(), "VmRSS") > 0; }, 5s));
  const long idle = proc_status_kib(w.proc->pid(), "VmRSS");
  std::string body = chat_body("burst", 2, false, "no-such-model");
  body.insert(body.size() - 1, std::string(30'000'000, ' '));
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  for (int i = 0; i < 16; ++i) {
    clients.emplace_back([&] {
      Client c(w.port);
      if (c.post("/v1/chat/completions", body).status == 404) {
        ++answered;
      }
    });
  }
  for (auto& t : clients) {
    t.join();
  }
  EXPECT_EQ(answered.load(), 16);
  const bool returned = wait_until([&] { return proc_status_kib(w.proc->pid(), "VmRSS") <= 2 * idle; }, 10s);
  EXPECT_TRUE(returned) << "idle " << idle << " KiB, now " << proc_status_kib(w.proc->pid(), "VmRSS")
                        << " KiB";
}
