// The configuration file read again while the warden serves (docs/config.md, "Reloading"): SIGHUP and
// POST /api/reload, each while a stream is in flight that must end whole.
#include <signal.h>

#include "reload_support.hpp"

using namespace gateway_test;
using namespace reload_test;
using namespace std::chrono_literals;

// A rotated key: the new one is taken and the old one refused from the reload on, while the stream that
// came in with the old key streams to its end.
TEST(GatewayReload, SighupRotatesTheApiKeysAndTheStreamInFlightCompletes) {
  auto sim = start_sim(1, 0.005);
  const std::string model = dp_model(sim->port(), 1);
  Warden w(model, "api_keys: [old-key]\n");
  ASSERT_EQ(small_request(w.port, "new-key"), 401u);
  Stream stream(w.port, bearer("old-key"));
  ASSERT_TRUE(wait_until([&] { return in_flight(sim->port(), 1); }, 20s));
  rewrite(w, model, "api_keys: [new-key]\n");
  w.proc->signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return small_request(w.port, "new-key") == 200u; }, 10s));
  EXPECT_EQ(small_request(w.port, "old-key"), 401u);
  EXPECT_TRUE(stream.whole());
}

// A routing change in the file reaches the model's router; the conversation homes are kept.
TEST(GatewayReload, SighupAppliesARoutingChange) {
  auto sim = start_sim(2, 0.005);
  Warden w(dp_model(sim->port(), 2));
  ASSERT_TRUE(card(w.port).at("routing").at("affinity").as_bool());
  Stream stream(w.port, {});
  ASSERT_TRUE(wait_until([&] { return in_flight(sim->port(), 2); }, 20s));
  const auto homes = num(card(w.port).at("routing").at("live_sessions"));
  rewrite(w, dp_model(sim->port(), 2, "{ affinity: false, spill_threshold: 4 }"), "");
  w.proc->signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return !card(w.port).at("routing").at("affinity").as_bool(); }, 10s));
  EXPECT_EQ(num(card(w.port).at("routing").at("live_sessions")), homes);
  EXPECT_TRUE(stream.whole());
}

// A file with errors changes nothing: every error is logged with its line, the running keys stay, and the
// stream goes on; the endpoint answers 400 with the errors.
TEST(GatewayReload, ABrokenFileIsRefusedWhole) {
  auto sim = start_sim(1, 0.005);
  const std::string model = dp_model(sim->port(), 1);
  Warden w(model, "api_keys: [old-key]\n");
  Stream stream(w.port, bearer("old-key"));
  ASSERT_TRUE(wait_until([&] { return in_flight(sim->port(), 1); }, 20s));
  // A valid key change next to two errors: none of it may apply.
  rewrite(w, model, "api_keys: [new-key]\nmax_connections: lots\ntimeouts: { idle: soon }\n");
  w.proc->signal(SIGHUP);
  ASSERT_TRUE(wait_until(
      [&] { return w.proc->stderr_text().find("configuration not reloaded") != std::string::npos; }, 10s));
  const std::string log = w.proc->stderr_text();
  EXPECT_NE(log.find("warden.yaml:4:"), std::string::npos) << log;
  EXPECT_NE(log.find("warden.yaml:5:"), std::string::npos) << log;
  EXPECT_EQ(small_request(w.port, "old-key"), 200u);
  EXPECT_EQ(small_request(w.port, "new-key"), 401u);
  Client admin(w.port);
  auto r = admin.post("/api/reload", "", bearer("secret"));
  EXPECT_EQ(r.status, 400u) << r.body;
  EXPECT_NE(r.body.find("warden.yaml:4:"), std::string::npos) << r.body;
  EXPECT_EQ(small_request(w.port, "old-key"), 200u);
  EXPECT_TRUE(stream.whole());
}

std::size_t replica_count(int port) {
  return card(port).at("routing").at("replicas").as_array().size();
}

// A rank added behind the data-parallel URL: routed to once scraped, while the stream on rank 0 goes on
// and the conversation homes stay.
TEST(GatewayReload, SighupAddsAReplica) {
  auto sim = start_sim(2, 0.005);
  Warden w(dp_model(sim->port(), 1));
  Stream stream(w.port, {});
  ASSERT_TRUE(wait_until([&] { return in_flight(sim->port(), 1); }, 20s));
  const auto homes = num(card(w.port).at("routing").at("live_sessions"));
  rewrite(w, dp_model(sim->port(), 2), "");
  w.proc->signal(SIGHUP);
  ASSERT_TRUE(wait_until(
      [&] { return replica_count(w.port) == 2 && replica_of(card(w.port), 1).at("healthy").as_bool(); },
      10s));
  EXPECT_EQ(num(card(w.port).at("routing").at("live_sessions")), homes);
  Client c(w.port);
  auto r =
      c.post("/v1/chat/completions", chat_body("to the new rank", 2, false), {{"X-Warden-Replica", "1"}});
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.header("x-warden-replica"), "1");
  EXPECT_TRUE(stream.whole());
}

// A rank removed while a stream runs on it: the stream ends whole, new requests go to the rank that
// remains.
TEST(GatewayReload, SighupRemovesAReplica) {
  auto sim = start_sim(2, 0.005);
  Warden w(dp_model(sim->port(), 2));
  Stream stream(w.port, {{"X-Warden-Replica", "1"}});
  ASSERT_TRUE(wait_until([&] { return sim_running(sim->port(), 1) >= 1; }, 20s));
  rewrite(w, dp_model(sim->port(), 1), "");
  w.proc->signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return replica_count(w.port) == 1; }, 10s));
  Client c(w.port);
  auto r = c.post("/v1/chat/completions", chat_body("after the removal", 2, false));
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.header("x-warden-replica"), "0");
  EXPECT_TRUE(stream.whole());
}

// What only a restart changes is listed with the value in force, the rest applies.
TEST(GatewayReload, WhatNeedsARestartIsReported) {
  auto sim = start_sim(2);
  Warden w(dp_model(sim->port(), 2), "shutdown_grace: 20s\n");
  rewrite(w, dp_model(sim->port(), 2, "{ affinity: false, spill_threshold: 8 }"), "shutdown_grace: 5s\n");
  Client admin(w.port);
  auto r = admin.post("/api/reload", "", bearer("secret"));
  ASSERT_EQ(r.status, 200u) << r.body;
  const auto v = boost::json::parse(r.body).as_object();
  const auto& restart = v.at("restart_required").as_array();
  ASSERT_EQ(restart.size(), 1u) << r.body;
  EXPECT_EQ(restart.at(0).as_string(), "shutdown_grace (in force: 20000ms)") << r.body;
  ASSERT_EQ(v.at("applied").as_array().size(), 1u) << r.body;
  EXPECT_EQ(v.at("applied").as_array().at(0).as_string(), "model m: routing") << r.body;
}

// The endpoint is an admin change: the admin token or nothing.
TEST(GatewayReload, TheEndpointNeedsTheAdminToken) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1));
  Client c(w.port);
  EXPECT_EQ(c.post("/api/reload", "", bearer("wrong")).status, 401u);
  EXPECT_EQ(c.get("/api/reload", bearer("secret")).status, 405u);
  auto r = c.post("/api/reload", "", bearer("secret"));
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_TRUE(boost::json::parse(r.body).at("applied").as_array().empty()) << r.body;
}

// A routing setting the file left as it was keeps its admin change; the one the file changed takes the
// file's value.
TEST(GatewayReload, AnAdminRoutingChangeStaysUnlessTheFileChangesThatSetting) {
  auto sim = start_sim(2);
  Warden w(dp_model(sim->port(), 2, "{ affinity: true, spill_threshold: 8 }"));
  Client c(w.port);
  const auto patched = c.raw().request(boost::beast::http::verb::patch, "/api/models/m/routing",
                                       R"({"affinity": false})", bearer("secret"));
  ASSERT_TRUE(patched && patched->status == 200u);
  rewrite(w, dp_model(sim->port(), 2, "{ affinity: true, spill_threshold: 3 }"), "");
  auto r = c.post("/api/reload", "", bearer("secret"));
  ASSERT_EQ(r.status, 200u) << r.body;
  const auto routing = card(w.port).at("routing").as_object();
  EXPECT_FALSE(routing.at("affinity").as_bool());
  EXPECT_EQ(num(routing.at("spill_threshold")), 3);
}

// allowed_origins and allowed_hosts are taken by a reload: an origin removed from the file is refused
// from then on and one added is let in; a Host added is answered (a reload once kept the lists read at
// start and said "nothing changed").
TEST(GatewayReload, TheBrowsersListsApplyAtAReload) {
  auto sim = start_sim(1);
  const std::string model = dp_model(sim->port(), 1);
  Warden w(model, "allowed_origins: [\"https://old.example\"]\n");
  auto from = [&](const std::string& origin, const std::string& host = "127.0.0.1") {
    const std::string body = chat_body("hi", 2, false);
    return test_support::raw_status(test_support::raw_exchange(
        w.port,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\nOrigin: " + origin +
            "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
            body,
        10s));
  };
  ASSERT_EQ(from("https://old.example"), 200);
  ASSERT_EQ(from("https://new.example"), 403);
  ASSERT_EQ(from("https://old.example", "warden.lan"), 421);
  rewrite(w, model, "allowed_origins: [\"https://new.example\"]\nallowed_hosts: [warden.lan]\n");
  Client admin(w.port);
  const auto r = admin.post("/api/reload", "", bearer("secret"));
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_NE(r.body.find("allowed_origins"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("allowed_hosts"), std::string::npos) << r.body;
  EXPECT_EQ(from("https://old.example"), 403);
  EXPECT_EQ(from("https://new.example"), 200);
  EXPECT_EQ(from("https://new.example", "warden.lan"), 200);
}
