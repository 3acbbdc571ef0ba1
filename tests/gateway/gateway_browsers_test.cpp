// What a web page may ask of a warden on a developer's loopback, with real processes: a page on another
// origin cannot reach the engine even without api_keys, a DNS-rebinding page (its own name, resolving to
// 127.0.0.1) reads nothing, and the console's own origin and the listed ones work.
#include <gtest/gtest.h>

#include <string>

#include "gateway_support.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

namespace {

// A raw request with the given Host and (when not empty) Origin; the connection closes after refusals.
std::string raw_request(int port, const std::string& method, const std::string& target,
                        const std::string& host, const std::string& origin, const std::string& body = "") {
  std::string head = method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n";
  if (!origin.empty()) {
    head += "Origin: " + origin + "\r\n";
  }
  if (!body.empty()) {
    head += "Content-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return test_support::raw_exchange(port, head + "\r\n" + body, 10s);
}

double requests_routed(int port) {
  return metric_value(port, R"(lm_warden_requests_total{model="m",replica="0",route="new",status="200"})");
}

}  // namespace

// No api_keys: a page on another origin sends the `text/plain` POST a browser sends without asking; it is
// refused before the engine sees it, in the API's error format.
TEST(GatewayBrowsers, APageOnAnotherOriginCannotReachTheEngine) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1));
  const std::string self = "127.0.0.1:" + std::to_string(w.port);
  const std::string got = raw_request(w.port, "POST", "/v1/chat/completions", self, "http://evil.example",
                                      chat_body("hi", 2, false));
  expect_raw_error(got, 403, false);
  EXPECT_NE(got.find("origin_not_allowed"), std::string::npos) << got;
  const std::string anthropic =
      raw_request(w.port, "POST", "/v1/messages", self, "http://evil.example", chat_body("hi", 2, false));
  expect_raw_error(anthropic, 403, true);
  EXPECT_EQ(requests_routed(w.port), 0);
  // The console's own origin, or no Origin at all (a program, not a page), goes through.
  EXPECT_EQ(test_support::raw_status(raw_request(w.port, "POST", "/v1/chat/completions", self,
                                                 "http://" + self, chat_body("console", 2, false))),
            200);
  EXPECT_EQ(test_support::raw_status(raw_request(w.port, "POST", "/v1/chat/completions", self, "",
                                                 chat_body("program", 2, false))),
            200);
  EXPECT_EQ(requests_routed(w.port), 2);  // two conversations, each new
}

// DNS rebinding: the page's own name, now resolving to 127.0.0.1, arrives in Host and is refused on every
// path, the open admin API included; loopback names are answered.
TEST(GatewayBrowsers, ALoopbackWardenAnswersOnlyForLoopbackNames) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1));
  const std::string port = std::to_string(w.port);
  for (const std::string target : {"/api/models", "/", "/metrics", "/health"}) {
    const std::string got = raw_request(w.port, "GET", target, "rebind.evil.example:" + port, "");
    expect_raw_error(got, 421, false);
    EXPECT_EQ(got.find("\"routing\""), std::string::npos) << got;
  }
  for (const std::string& host : {"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port}) {
    EXPECT_EQ(test_support::raw_status(raw_request(w.port, "GET", "/api/models", host, "")), 200) << host;
  }
}

// The configured names and origins are accepted like the loopback's and the console's own.
TEST(GatewayBrowsers, ListedHostsAndOriginsAreAccepted) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1),
           "allowed_hosts: [devbox]\nallowed_origins: [\"http://localhost:3000\"]\n");
  const std::string port = std::to_string(w.port);
  EXPECT_EQ(test_support::raw_status(raw_request(w.port, "GET", "/api/models", "devbox:" + port, "")), 200);
  EXPECT_EQ(test_support::raw_status(raw_request(w.port, "POST", "/v1/chat/completions", "127.0.0.1:" + port,
                                                 "http://localhost:3000", chat_body("hi", 2, false))),
            200);
  EXPECT_EQ(test_support::raw_status(raw_request(w.port, "POST", "/v1/chat/completions", "127.0.0.1:" + port,
                                                 "http://localhost:3001", chat_body("hi", 2, false))),
            403);
}
