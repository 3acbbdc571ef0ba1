// The browser bounds of origin_guard.hpp on request headers alone: which Host names a loopback warden
// answers for, and which Origin may call it.
#include "gateway/config/origin_guard.hpp"

#include <gtest/gtest.h>

namespace http = boost::beast::http;
using warden::gateway::check_origin;
using warden::gateway::origin_policy;
using warden::gateway::OriginPolicy;

namespace {

http::request_header<> header(std::string_view host, std::string_view origin = {}) {
  http::request_header<> h;
  h.method(http::verb::post);
  h.target("/v1/chat/completions");
  h.version(11);
  if (!host.empty()) {
    h.set(http::field::host, host);
  }
  if (!origin.empty()) {
    h.set(http::field::origin, origin);
  }
  return h;
}

unsigned refused(const OriginPolicy& p, std::string_view host, std::string_view origin = {}) {
  const auto r = check_origin(p, header(host, origin));
  return r ? r->status : 0;
}

}  // namespace

TEST(OriginGuard, ALoopbackListenerAnswersOnlyForLoopbackNames) {
  const OriginPolicy p = origin_policy("127.0.0.1", {}, {});
  for (const char* host :
       {"127.0.0.1:8080", "127.0.0.1", "localhost:8080", "LOCALHOST", "console.localhost:80", "127.1.2.3:9",
        "[::1]:8080", "[::1]", "[::ffff:127.0.0.1]:8080"}) {
    EXPECT_EQ(refused(p, host), 0u) << host;
  }
  // DNS rebinding: a page's own name that now resolves to 127.0.0.1.
  for (const char* host : {"evil.example:8080", "evil.example", "10.0.0.5:8080", "localhost.evil.example",
                           "[::2]:8080", "127.0.0.1:80x", "[::1", "user@127.0.0.1"}) {
    EXPECT_EQ(refused(p, host), 421u) << host;
  }
  const auto r = check_origin(p, header("evil.example:8080"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, "misdirected_request");
  EXPECT_NE(r->message.find("allowed_hosts"), std::string::npos) << r->message;
}

TEST(OriginGuard, ConfiguredHostsAndOtherListenersAreAccepted) {
  EXPECT_EQ(refused(origin_policy("localhost", {"Devbox"}, {}), "devbox:8080"), 0u);
  EXPECT_EQ(refused(origin_policy("[::1]", {}, {}), "evil.example"), 421u);
  // A warden on every address is reached by names the operator chose: its Host is not checked.
  EXPECT_EQ(refused(origin_policy("0.0.0.0", {}, {}), "warden.example:8080"), 0u);
  // No Host at all (HTTP/1.0, hand-made requests) is not a browser's.
  EXPECT_EQ(refused(origin_policy("127.0.0.1", {}, {}), ""), 0u);
}

TEST(OriginGuard, OnlyTheConsolesOwnOriginOrAListedOneMayCall) {
  const OriginPolicy p = origin_policy("127.0.0.1", {}, {"http://localhost:3000", "HTTPS://Tools.Example/"});
  EXPECT_EQ(refused(p, "127.0.0.1:8080"), 0u);                           // no Origin: not a browser page
  EXPECT_EQ(refused(p, "127.0.0.1:8080", "http://127.0.0.1:8080"), 0u);  // the console
  EXPECT_EQ(refused(p, "localhost", "http://localhost:80"), 0u);         // default port either way
  // Behind a proxy that ends TLS the console's page is https, its Host the same.
  EXPECT_EQ(refused(p, "127.0.0.1:8080", "https://127.0.0.1:8080"), 0u);
  EXPECT_EQ(refused(p, "127.0.0.1:8080", "http://localhost:3000"), 0u);
  EXPECT_EQ(refused(p, "127.0.0.1:8080", "https://tools.example"), 0u);
  for (const char* origin :
       {"http://evil.example", "http://127.0.0.1:8081", "null", "http://localhost:3000/path", "garbage"}) {
    EXPECT_EQ(refused(p, "127.0.0.1:8080", origin), 403u) << origin;
  }
  const auto r = check_origin(p, header("127.0.0.1:8080", "http://evil.example"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->code, "origin_not_allowed");
  EXPECT_NE(r->message.find("allowed_origins"), std::string::npos) << r->message;
  EXPECT_EQ(refused(origin_policy("127.0.0.1", {}, {"null"}), "127.0.0.1:8080", "null"), 0u);
}

TEST(OriginGuard, OriginsAreComparedInOneForm) {
  using warden::gateway::normalize_origin;
  EXPECT_EQ(normalize_origin("HTTP://LocalHost:80/"), "http://localhost");
  EXPECT_EQ(normalize_origin("https://x.example:443"), "https://x.example");
  EXPECT_EQ(normalize_origin("http://[::1]:3000"), "http://[::1]:3000");
  EXPECT_EQ(normalize_origin("Null"), "null");
  EXPECT_FALSE(normalize_origin("localhost:3000"));
  EXPECT_FALSE(normalize_origin("http://u@x.example"));
  EXPECT_FALSE(normalize_origin("http://x.example/app"));
  EXPECT_FALSE(normalize_origin("http://x.example?q"));
}
