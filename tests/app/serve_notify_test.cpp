// `lm-warden serve` under a systemd-style notification socket the test opens: READY=1 after the listener
// and the first scrape, WATCHDOG=1 pings at half of WATCHDOG_USEC, STOPPING=1 on SIGTERM, RELOADING=1 then
// READY=1 around a SIGHUP.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "gateway/gateway_support.hpp"
#include "support/notify_socket.hpp"

namespace {

using gateway_test::ChildProcess;
using gateway_test::Client;
using test_support::NotifySocket;
using test_support::TempDir;

constexpr auto kWait = std::chrono::seconds(20);

// A warden in front of `engine_url` (one replica) with NOTIFY_SOCKET (and WATCHDOG_USEC unless empty).
std::unique_ptr<ChildProcess> start_serve(const TempDir& dir, const std::string& engine_url,
                                          const std::string& socket, const std::string& watchdog_usec,
                                          const std::string& extra = "") {
  const std::string cfg = dir.file("warden.yaml");
  std::ofstream(cfg) << "metrics: { scrape_interval: 100ms, scrape_timeout: 500ms }\n"
                     << extra << "models:\n  - name: m\n    served_model_name: " << gateway_test::kServed
                     << "\n    replicas: { urls: [" << engine_url << "] }\n";
  ChildProcess::Env env{{"NOTIFY_SOCKET", socket}};
  if (!watchdog_usec.empty()) {
    env.emplace_back("WATCHDOG_USEC", watchdog_usec);
  }
  return std::make_unique<ChildProcess>(
      std::vector<std::string>{WARDEN_BINARY, "serve", "--config", cfg, "--listen", "127.0.0.1:0",
                               "--state-dir", dir.file("state"), "--log-level", "warn"},
      env);
}

// The warden's count of scrapes of `url` (0 when it has none yet).
double scrapes_of(int warden_port, const std::string& url) {
  const auto metrics = Client(warden_port).get("/metrics").body;
  const std::string key = "lm_warden_scrapes_total{url=\"" + url + "\"} ";
  const auto at = metrics.find(key);
  return at == std::string::npos ? 0 : std::stod(metrics.substr(at + key.size()));
}

TEST(ServeNotify, ReadyAfterTheFirstScrapeThenWatchdogPingsThenStoppingOnSigterm) {
  TempDir dir;
  auto sim = gateway_test::start_sim(1);
  const std::string url = "http://127.0.0.1:" + std::to_string(sim->port());
  NotifySocket sock(dir.file("notify"));
  auto serve = start_serve(dir, url, sock.name(), "200000");  // pings every 100 ms
  ASSERT_TRUE(sock.receive_until("READY=1", kWait)) << serve->stderr_text();
  // READY=1 came after the listener was bound and the engine's metrics were read once.
  const int port = serve->wait_for_port(std::chrono::milliseconds(0));
  EXPECT_GE(scrapes_of(port, url), 1) << "ready before the first scrape";
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sock.receive(std::chrono::seconds(5)), "WATCHDOG=1");
  }
  serve->signal(SIGTERM);
  EXPECT_TRUE(sock.receive_until("STOPPING=1", kWait));
  EXPECT_EQ(serve->wait_exit(kWait), 0) << serve->stderr_text();
}

TEST(ServeNotify, AnAbstractSocketWithoutWatchdogGetsReadyAndStoppingOnly) {
  TempDir dir;
  auto sim = gateway_test::start_sim(1);
  NotifySocket sock("@warden-serve-notify-" + std::to_string(::getpid()));
  // No drain (shutdown_grace 0): the stop itself says STOPPING=1.
  auto serve = start_serve(dir, "http://127.0.0.1:" + std::to_string(sim->port()), sock.name(), "",
                           "shutdown_grace: 0\n");
  EXPECT_EQ(sock.receive(kWait), "READY=1") << serve->stderr_text();
  serve->wait_for_port();
  serve->signal(SIGTERM);
  EXPECT_EQ(sock.receive(kWait), "STOPPING=1");
  EXPECT_EQ(serve->wait_exit(kWait), 0);
  EXPECT_EQ(sock.receive(std::chrono::milliseconds(100)), std::nullopt) << "nothing after STOPPING=1";
}

TEST(ServeNotify, StoppingIsSaidWhenTheDrainBeginsNotWhenItEnds) {
  TempDir dir;
  auto sim = gateway_test::start_sim(1, 0.005);  // ~20 ms per token: the stream lasts until released
  NotifySocket sock(dir.file("notify"));
  auto serve = start_serve(dir, "http://127.0.0.1:" + std::to_string(sim->port()), sock.name(), "");
  ASSERT_TRUE(sock.receive_until("READY=1", kWait)) << serve->stderr_text();
  gateway_test::HeldStream held(serve->wait_for_port(), gateway_test::chat_body("long", 3000, true), {});
  ASSERT_TRUE(held.wait_started());
  serve->signal(SIGTERM);
  EXPECT_EQ(sock.receive(kWait), "STOPPING=1");
  EXPECT_TRUE(serve->running()) << "the stream in flight keeps the drain going";
  held.release();  // the client leaves, which ends the drain
  EXPECT_EQ(serve->wait_exit(kWait), 0);
  EXPECT_EQ(sock.receive(std::chrono::milliseconds(100)), std::nullopt) << "STOPPING=1 is said once";
}

// SIGHUP reads the file again between RELOADING=1 (with the monotonic time systemd wants) and READY=1, also
// when the file is refused (the old configuration runs on, ready).
TEST(ServeNotify, ReloadingThenReadyAroundAReload) {
  TempDir dir;
  auto sim = gateway_test::start_sim(1);
  NotifySocket sock(dir.file("notify"));
  auto serve = start_serve(dir, "http://127.0.0.1:" + std::to_string(sim->port()), sock.name(), "");
  ASSERT_TRUE(sock.receive_until("READY=1", kWait)) << serve->stderr_text();
  serve->wait_for_port();
  for (const bool broken : {false, true}) {
    if (broken) {
      std::ofstream(dir.file("warden.yaml"), std::ios::app) << "max_connections: lots\n";
    }
    serve->signal(SIGHUP);
    const auto reloading = sock.receive(kWait);
    ASSERT_TRUE(reloading.has_value());
    EXPECT_EQ(reloading->rfind("RELOADING=1\nMONOTONIC_USEC=", 0), 0u) << *reloading;
    EXPECT_EQ(sock.receive(kWait), "READY=1") << serve->stderr_text();
  }
  EXPECT_TRUE(serve->running());
  serve->signal(SIGTERM);
  EXPECT_EQ(serve->wait_exit(kWait), 0);
}

TEST(ServeNotify, AnEngineThatDoesNotAnswerDoesNotHoldReadinessBack) {
  TempDir dir;
  NotifySocket sock(dir.file("notify"));
  const int dead = test_support::free_port();
  auto serve = start_serve(dir, "http://127.0.0.1:" + std::to_string(dead), sock.name(), "");
  EXPECT_TRUE(sock.receive_until("READY=1", kWait)) << serve->stderr_text();
  // Served: the replica is routed around and /health answers.
  EXPECT_EQ(Client(serve->wait_for_port()).get("/health").status, 200U);
}

}  // namespace
