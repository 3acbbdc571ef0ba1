// Requests waiting on a replica that has not answered yet, with real processes and an engine stand-in the
// test runs itself: a black hole that accepts connections and never answers.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "engine_stand_ins.hpp"
#include "gateway_support.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

namespace {

std::string urls_model(const std::vector<int>& ports) {
  std::string urls;
  for (int p : ports) {
    urls += (urls.empty() ? "" : ", ") + std::string("http://127.0.0.1:") + std::to_string(p);
  }
  return "  - name: m\n    served_model_name: " + kServed + "\n    replicas: { urls: [" + urls + "] }\n";
}

// Scrapes that hang longer than the test: the black hole stays healthy, as a wedged engine whose
// /metrics still answers would.
const std::string kSlowScrapes =
    "metrics: { scrape_interval: 1s, scrape_timeout: 60s, unhealthy_after: 3 }\n";

}  // namespace

// A client that gives up while its request waits for the engine's first byte is logged and counted 499
// (not 502: the replica did not fail), and the engine's connection is closed.
TEST(GatewayWaiting, AClientThatLeavesIsCounted499) {
  BlackHole hole;
  Warden w(urls_model({hole.port()}), kSlowScrapes);
  {
    RawStream s(w.port, "/v1/chat/completions", chat_body("never answered", 4, true));
    ASSERT_TRUE(wait_until([&] { return num(card(w.port).at("routing").at("in_flight")) == 1; }, 10s));
  }  // the client hangs up
  const std::string series = R"(lm_warden_requests_total{model="m",replica="0",route="new",status="499"})";
  EXPECT_TRUE(wait_until([&] { return metric_value(w.port, series) == 1; }, 10s));
  EXPECT_EQ(
      metric_value(w.port, R"(lm_warden_requests_total{model="m",replica="0",route="new",status="502"})"), 0);
  EXPECT_EQ(num(card(w.port).at("routing").at("in_flight")), 0);
}

// A replica whose engine accepts requests and never answers, and whose /metrics stops answering too: once
// it is marked unhealthy, the requests waiting on it go to the other replica at once (route failover),
// long before timeouts.first_byte (60 s here).
TEST(GatewayWaiting, RequestsWaitingOnAReplicaMarkedUnhealthyGoElsewhere) {
  BlackHole hole;
  auto sim = start_sim(1, 0.005);  // ~20 ms a token: the sim stays busy, so placement uses the hole too
  Warden w(urls_model({hole.port(), sim->port()}),
           "metrics: { scrape_interval: 100ms, scrape_timeout: 2s, unhealthy_after: 1 }\n"
           "timeouts: { first_byte: 60s }\n");
  struct Outcome {
    unsigned status = 0;
    std::string replica;
    std::chrono::steady_clock::duration waited{};
  };
  std::vector<Outcome> outcomes(4);
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    clients.emplace_back([&, i] {
      auto t = Client::short_timeouts();
      t.first_byte = 20s;
      Client c(w.port, t);
      const auto started = std::chrono::steady_clock::now();
      auto r = c.raw().post("/v1/chat/completions", chat_body("waiting " + std::to_string(i), 20, false));
      outcomes[i].waited = std::chrono::steady_clock::now() - started;
      if (r) {
        outcomes[i].status = r->status;
        outcomes[i].replica = r->header("x-warden-replica");
      }
    });
  }
  const bool on_hole = wait_until([&] { return num(replica_of(card(w.port), 0).at("in_flight")) >= 1; }, 2s);
  for (auto& t : clients) {
    t.join();
  }
  ASSERT_TRUE(on_hole) << "no request was placed on the black hole before it was marked unhealthy";
  for (const Outcome& o : outcomes) {
    EXPECT_EQ(o.status, 200u);
    EXPECT_EQ(o.replica, "1");
    EXPECT_LT(o.waited, 8s);  // the marking (~2 s) and the answer, not first_byte
  }
  EXPECT_GE(metric_value(w.port,
                         R"(lm_warden_requests_total{model="m",replica="1",route="failover",status="200"})"),
            1);
  EXPECT_NE(w.proc->stderr_text().find("waiting on a replica marked unhealthy"), std::string::npos)
      << w.proc->stderr_text();
}
