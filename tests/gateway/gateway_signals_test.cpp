// Every signal an operator or the system may send has a meaning (docs/deployment.md, "Signals"), with real
// processes: SIGHUP, SIGUSR1 and SIGUSR2 are logged and change nothing (a stream in flight goes on to its
// end), SIGQUIT drains like SIGTERM, and `lm-warden sim` survives the ones it ignores too.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gateway_support.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

namespace {

// A streamed chat request on its own thread: whole once it ended with [DONE] and status 200.
class Streaming {
 public:
  Streaming(int port, std::string text, int tokens) {
    thread_ = std::thread([this, port, text = std::move(text), tokens] {
      Client c(port);
      auto r =
          c.raw().post("/v1/chat/completions", chat_body(text, tokens, true), {}, [this](std::string_view) {
            started_ = true;
            return true;
          });
      whole_ = r && r->status == 200 && r->body.find("data: [DONE]") != std::string::npos;
    });
  }
  ~Streaming() { join(); }
  bool wait_started() {
    return wait_until([this] { return started_.load(); }, 20s);
  }
  bool whole() {
    join();
    return whole_;
  }

 private:
  void join() {
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  std::thread thread_;
  std::atomic<bool> started_{false};
  bool whole_ = false;
};

}  // namespace

// SIGHUP (a closed terminal, `systemctl reload`, log rotation: the file is read again, here unchanged),
// SIGUSR1 and SIGUSR2 while a stream is in flight: the warden logs each, keeps running, the stream ends
// whole and a new request is answered.
TEST(GatewaySignals, HangupAndUserSignalsChangeNothing) {
  auto sim = start_sim(1, 0.005);  // ~20 ms a token: 150 tokens stream for about 3 s
  Warden w(dp_model(sim->port(), 1), "shutdown_grace: 20s\n");
  Streaming stream(w.port, "signals", 150);
  ASSERT_TRUE(stream.wait_started());
  for (int sig : {SIGHUP, SIGUSR1, SIGUSR2}) {
    w.proc->signal(sig);
  }
  // What SIGHUP's reload changes is tested in gateway_reload_test.cpp; here only that nothing stops.
  for (const char* line : {"SIGUSR1 ignored", "SIGUSR2 ignored"}) {
    EXPECT_TRUE(wait_until([&] { return w.proc->stderr_text().find(line) != std::string::npos; }, 10s))
        << line << "\n"
        << w.proc->stderr_text();
  }
  EXPECT_TRUE(stream.whole());
  ASSERT_TRUE(w.proc->running());
  Client c(w.port);
  EXPECT_EQ(c.get("/health").status, 200u);
  EXPECT_EQ(c.post("/v1/chat/completions", chat_body("after", 4, false)).status, 200u);
}

// SIGQUIT drains like SIGTERM: the streams in flight end whole and the warden exits 0 (by default the
// signal would end it at once with a core dump, status 131).
TEST(GatewaySignals, QuitDrainsTheStreamsInFlight) {
  auto sim = start_sim(1, 0.005);
  Warden w(dp_model(sim->port(), 1), "shutdown_grace: 20s\n");
  std::vector<std::unique_ptr<Streaming>> streams;
  for (int i = 0; i < 3; ++i) {
    streams.push_back(std::make_unique<Streaming>(w.port, "quit " + std::to_string(i), 100));
  }
  for (auto& s : streams) {
    ASSERT_TRUE(s->wait_started());
  }
  w.proc->signal(SIGQUIT);
  const auto code = w.proc->wait_exit(25s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  for (auto& s : streams) {
    EXPECT_TRUE(s->whole());
  }
}

// The engine stand-in ignores the same signals: an engine restarted by a closed terminal would lose every
// conversation's cache.
TEST(GatewaySignals, TheSimIgnoresHangupAndUserSignals) {
  auto sim = start_sim(1);
  for (int sig : {SIGHUP, SIGUSR1, SIGUSR2}) {
    sim->signal(sig);
  }
  EXPECT_TRUE(
      wait_until([&] { return sim->stderr_text().find("SIGUSR2 ignored") != std::string::npos; }, 10s))
      << sim->stderr_text();
  ASSERT_TRUE(sim->running());
  Client c(sim->port());
  EXPECT_EQ(c.post("/v1/chat/completions", chat_body("still here", 4, false, kServed)).status, 200u);
  sim->signal(SIGQUIT);
  const auto code = sim->wait_exit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
}
