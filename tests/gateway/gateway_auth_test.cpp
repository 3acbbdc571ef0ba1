// With `auth: { reads: true }`, reading the warden's state needs a key too (real processes).
#include <gtest/gtest.h>

#include "gateway_support.hpp"

using namespace gateway_test;

namespace {

void expect_401(const warden::net::SyncResponse& r) {
  expect_openai_error(r, 401);
  EXPECT_EQ(boost::json::parse(r.body).at("error").at("type").as_string(), "authentication_error") << r.body;
}

}  // namespace

TEST(GatewayAuth, ReadsNeedAKeyOrTheAdminTokenWhenConfigured) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), "api_keys: [client-key]\nauth: { reads: true }\n");
  Client c(w.port);
  for (const char* path : {"/metrics", "/api/models", "/api/models/m", "/api/models/m/logs",
                           "/api/stats?model=m", "/v1/models"}) {
    expect_401(c.get(path));
    expect_401(c.get(path, {{"Authorization", "Bearer wrong"}}));
    EXPECT_EQ(c.get(path, {{"Authorization", "Bearer client-key"}}).status,
              std::string_view(path) == "/api/models/m/logs" ? 404u : 200u)
        << path;
    EXPECT_NE(c.get(path, {{"x-api-key", "client-key"}}).status, 401u) << path;
    EXPECT_NE(c.get(path, {{"Authorization", "Bearer secret"}}).status, 401u) << path << " (admin token)";
  }
  // Liveness and the console's own files stay open; the console's API calls carry the token.
  EXPECT_EQ(c.get("/health").status, 200u);
  EXPECT_EQ(c.get("/").status, 200u);
  EXPECT_EQ(c.get("/metrics", {{"Authorization", "Bearer client-key"}}).header("content-type"),
            "text/plain; version=0.0.4");
}

// With api_keys, reads need a key by default; `auth: { reads: false }` keeps them open.
TEST(GatewayAuth, ReadsNeedAKeyByDefaultWithKeysConfigured) {
  auto sim = start_sim(1);
  Warden keyed(dp_model(sim->port(), 1), "api_keys: [client-key]\n");
  Client c(keyed.port);
  EXPECT_EQ(c.get("/metrics").status, 401u);
  EXPECT_EQ(c.get("/api/models").status, 401u);
  EXPECT_EQ(c.get("/v1/models").status, 401u);
  EXPECT_EQ(c.get("/api/models", {{"Authorization", "Bearer client-key"}}).status, 200u);
  Warden open(dp_model(sim->port(), 1), "api_keys: [client-key]\nauth: { reads: false }\n");
  Client o(open.port);
  EXPECT_EQ(o.get("/metrics").status, 200u);
  EXPECT_EQ(o.get("/api/models").status, 200u);
  EXPECT_EQ(o.get("/v1/models").status, 200u);
}
