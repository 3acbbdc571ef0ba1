// Routing through a real warden in front of real simulators (loopback, port 0).
#include <gtest/gtest.h>

#include <set>

#include "gateway_support.hpp"

using namespace gateway_test;

namespace {

warden::net::SyncResponse chat(Client& c, const std::string& session, const std::string& text = "hello",
                               warden::net::Headers extra = {}) {
  extra.emplace_back("X-Warden-Session", session);
  return c.post("/v1/chat/completions", chat_body(text), extra);
}

}  // namespace

TEST(GatewayRouting, TurnsOfOneConversationStayOnOneReplica) {
  auto sim = start_sim(4);
  Warden w(dp_model(sim->port(), 4));
  Client c(w.port);
  std::set<std::string> replicas;
  std::vector<std::string> routes;
  std::string history = "a long system prompt and a first question";
  for (int turn = 0; turn < 6; ++turn) {
    auto r = chat(c, "conv-1", history);
    ASSERT_EQ(r.status, 200u) << r.body;
    replicas.insert(r.header("x-warden-replica"));
    routes.push_back(r.header("x-warden-route"));
    history += " and another turn";
  }
  EXPECT_EQ(replicas.size(), 1u);
  EXPECT_EQ(routes.front(), "new");
  for (std::size_t i = 1; i < routes.size(); ++i) {
    EXPECT_EQ(routes[i], "sticky");
  }
  // Claude Code's own header works the same way, over the Anthropic API.
  std::set<std::string> cc;
  for (int turn = 0; turn < 3; ++turn) {
    auto r =
        c.post("/v1/messages?beta=true",
               R"({"model":"m","max_tokens":3,"stream":true,"messages":[{"role":"user","content":"hi"}]})",
               {{"X-Claude-Code-Session-Id", "11111111-2222-3333-4444-555555555555"},
                {"anthropic-version", "2023-06-01"}});
    ASSERT_EQ(r.status, 200u) << r.body;
    cc.insert(r.header("x-warden-replica"));
  }
  EXPECT_EQ(cc.size(), 1u);
  auto k = card(w.port);
  std::int64_t sticky = 0;
  for (int i = 0; i < 4; ++i) {
    sticky += num(replica_of(k, i).at("sticky"));
  }
  EXPECT_EQ(sticky, 7);  // 5 + 2 follow-up turns
}

TEST(GatewayRouting, FourNewConversationsOnFourIdleReplicasLandOnFourReplicas) {
  auto sim = start_sim(4);
  Warden w(dp_model(sim->port(), 4));
  Client c(w.port);
  std::set<std::string> replicas;
  for (int i = 0; i < 4; ++i) {
    auto r = chat(c, "conversation-" + std::to_string(i));
    ASSERT_EQ(r.status, 200u);
    EXPECT_EQ(r.header("x-warden-route"), "new");
    replicas.insert(r.header("x-warden-replica"));
  }
  EXPECT_EQ(replicas.size(), 4u);
}

TEST(GatewayRouting, SpillsExactlyWhenHomeIsOverThresholdAndKeepsHome) {
  auto sim = start_sim(4, 0.005);
  Warden w(dp_model(sim->port(), 4, "{ affinity: true, spill_threshold: 1 }"));
  const std::string body = chat_body("keep generating", 3000);
  const warden::net::Headers h{{"X-Warden-Session", "busy"}};

  HeldStream first(w.port, body, h);
  ASSERT_TRUE(first.wait_started());
  HeldStream second(w.port, body, h);  // home has 1 in flight: not over the threshold of 1
  ASSERT_TRUE(second.wait_started());
  HeldStream third(w.port, body, h);  // home has 2 in flight: over the threshold → spill
  ASSERT_TRUE(third.wait_started());
  auto r1 = first.finish();
  auto r2 = second.finish();
  auto r3 = third.finish();
  EXPECT_EQ(r1.header("x-warden-route"), "new");
  EXPECT_EQ(r2.header("x-warden-route"), "sticky");
  EXPECT_EQ(r2.header("x-warden-replica"), r1.header("x-warden-replica"));
  EXPECT_EQ(r3.header("x-warden-route"), "spilled");
  EXPECT_NE(r3.header("x-warden-replica"), r1.header("x-warden-replica"));

  // The home is kept: once the load is gone the conversation comes back to it.
  ASSERT_TRUE(wait_until([&] { return num(card(w.port).at("routing").at("in_flight")) == 0; }));
  Client c(w.port);
  auto r4 = chat(c, "busy");
  EXPECT_EQ(r4.header("x-warden-route"), "sticky");
  EXPECT_EQ(r4.header("x-warden-replica"), r1.header("x-warden-replica"));
  auto k = card(w.port);
  const int spilled_to = std::stoi(r3.header("x-warden-replica"));
  EXPECT_EQ(num(replica_of(k, spilled_to).at("spilled_in")), 1);
}

// Two ranks of 128 KV blocks (2,048 tokens each): two conversations of ~1,200 tokens overflow one rank in
// the warden's estimate (the engine shares their identical text, so both still run).
// A conversation whose home overflows moves, for good, once the home has 2 requests in flight more than
// the other rank; with rebalance switched off it stays.
TEST(GatewayRouting, AConversationLeavesAnOverloadedHomeForGood) {
  auto sim = start_sim(2, 0.005, 0, {"--num-gpu-blocks", "128"});
  Warden w(dp_model(sim->port(), 2, "{ affinity: true, spill_threshold: 8 }"));
  ASSERT_TRUE(wait_until([&] { return num(replica_of(card(w.port), 1).at("kv_capacity_tokens")) > 0; }));
  std::string text;
  while (text.size() < 4800) {
    text += "history ";
  }
  const std::string body = chat_body(text, 4);
  Client c(w.port);
  const auto a = c.post("/v1/chat/completions", body, {{"X-Warden-Session", "a"}});
  ASSERT_EQ(a.header("x-warden-route"), "new");
  const std::string home = a.header("x-warden-replica");
  const warden::net::Headers b{{"X-Warden-Session", "b"}, {"X-Warden-Replica", home}};
  ASSERT_EQ(c.post("/v1/chat/completions", body, b).header("x-warden-route"), "pinned");

  HeldStream first(w.port, chat_body(text, 800), {{"X-Warden-Session", "a"}});  // 0 in flight at home
  ASSERT_TRUE(first.wait_started());
  HeldStream second(w.port, chat_body(text, 800), b);
  ASSERT_TRUE(second.wait_started());
  const auto moved = c.post("/v1/chat/completions", body, {{"X-Warden-Session", "a"}});  // 2 at home, 0 there
  EXPECT_EQ(first.finish().header("x-warden-route"), "sticky");
  EXPECT_EQ(second.finish().header("x-warden-route"), "pinned");
  EXPECT_EQ(moved.header("x-warden-route"), "rehomed");
  EXPECT_NE(moved.header("x-warden-replica"), home);
  ASSERT_TRUE(wait_until([&] { return num(card(w.port).at("routing").at("in_flight")) == 0; }));
  const auto after = c.post("/v1/chat/completions", body, {{"X-Warden-Session", "a"}});
  EXPECT_EQ(after.header("x-warden-route"), "sticky");
  EXPECT_EQ(after.header("x-warden-replica"), moved.header("x-warden-replica"));
  auto k = card(w.port);
  EXPECT_EQ(num(replica_of(k, std::stoi(moved.header("x-warden-replica"))).at("rehomed_in")), 1);
  EXPECT_TRUE(k.at("routing").at("rebalance").as_bool());

  // Switched off, the same overload keeps the conversation on its (new) home.
  namespace http = boost::beast::http;
  const auto patched = c.raw().request(http::verb::patch, "/api/models/m/routing", R"({"rebalance": false})",
                                       {{"Authorization", "Bearer secret"}});
  ASSERT_TRUE(patched);
  ASSERT_EQ(patched->status, 200u);
  EXPECT_FALSE(card(w.port).at("routing").at("rebalance").as_bool());
  const std::string now_home = moved.header("x-warden-replica");
  const warden::net::Headers d{{"X-Warden-Session", "d"}, {"X-Warden-Replica", now_home}};
  ASSERT_EQ(c.post("/v1/chat/completions", body, d).header("x-warden-route"), "pinned");
  HeldStream third(w.port, chat_body(text, 800), {{"X-Warden-Session", "a"}});
  ASSERT_TRUE(third.wait_started());
  HeldStream fourth(w.port, chat_body(text, 800), d);
  ASSERT_TRUE(fourth.wait_started());
  const auto kept = c.post("/v1/chat/completions", body, {{"X-Warden-Session", "a"}});
  EXPECT_EQ(kept.header("x-warden-route"), "sticky");
  EXPECT_EQ(kept.header("x-warden-replica"), now_home);
}

TEST(GatewayRouting, ClientPinsAreHonoured) {
  auto sim = start_sim(4);
  Warden w(dp_model(sim->port(), 4));
  Client c(w.port);
  auto home = chat(c, "pinned-conv");
  ASSERT_EQ(home.status, 200u);
  const int h = std::stoi(home.header("x-warden-replica"));
  const int other = h == 2 ? 1 : 2;  // neither home nor rank 3 (pinned below by the vLLM header)
  auto r = chat(c, "pinned-conv", "hello", {{"X-Warden-Replica", std::to_string(other)}});
  EXPECT_EQ(r.header("x-warden-route"), "pinned");
  EXPECT_EQ(r.header("x-warden-replica"), std::to_string(other));
  auto v = chat(c, "another", "hello", {{"X-data-parallel-rank", "3"}});  // vLLM's own header, too
  EXPECT_EQ(v.header("x-warden-route"), "pinned");
  EXPECT_EQ(v.header("x-warden-replica"), "3");
  // The engine really served it on that rank: its prefix-cache lookups grew there.
  ASSERT_TRUE(wait_until([&] { return num(replica_of(card(w.port), other).at("prefix_queries")) > 0; }));
  // The pin moved one request, not the conversation.
  EXPECT_EQ(chat(c, "pinned-conv").header("x-warden-replica"), std::to_string(h));
  EXPECT_EQ(num(replica_of(card(w.port), other).at("client_pinned")), 1);
}

TEST(GatewayRouting, AffinityOffBalancesLikeVllmAndIsSwitchedAtRuntime) {
  auto sim = start_sim(4, 0.005);
  // A slow scrape keeps vLLM's view (running + requests sent since the last scrape) deterministic here.
  Warden w(dp_model(sim->port(), 4), "metrics: { scrape_interval: 30s }\n");
  Client c(w.port);
  auto denied =
      c.raw().request(boost::beast::http::verb::patch, "/api/models/m/routing", R"({"affinity": false})");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401u);
  auto ok = c.raw().request(boost::beast::http::verb::patch, "/api/models/m/routing",
                            R"({"affinity": false})", {{"Authorization", "Bearer secret"}});
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200u) << ok->body;
  EXPECT_FALSE(json_of(*ok).at("routing").at("affinity").as_bool());

  // Four turns of one conversation at once: vLLM's rule spreads them over the four ranks.
  const std::string body = chat_body("same conversation", 3000);
  std::vector<std::unique_ptr<HeldStream>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(
        std::make_unique<HeldStream>(w.port, body, warden::net::Headers{{"X-Warden-Session", "one"}}));
    ASSERT_TRUE(held.back()->wait_started());
  }
  std::set<std::string> replicas;
  for (auto& s : held) {
    auto r = s->finish();
    EXPECT_EQ(r.header("x-warden-route"), "balanced");
    replicas.insert(r.header("x-warden-replica"));
  }
  EXPECT_EQ(replicas.size(), 4u);

  // Back on: the next request is routed by affinity again.
  auto on = c.raw().request(boost::beast::http::verb::patch, "/api/models/m/routing",
                            R"({"affinity": true, "spill_threshold": "auto"})",
                            {{"Authorization", "Bearer secret"}});
  ASSERT_EQ(on->status, 200u);
  EXPECT_EQ(json_of(*on).at("routing").at("spill_label").as_string(), "8 (auto)");
  auto r = chat(c, "fresh-after-on");
  EXPECT_EQ(r.header("x-warden-route"), "new");
}

TEST(GatewayRouting, ClientDisconnectMidStreamFreesTheEngineSlot) {
  auto sim = start_sim(2, 0.005);
  Warden w(dp_model(sim->port(), 2));
  auto s = std::make_unique<HeldStream>(w.port, chat_body("long answer please", 3000),
                                        warden::net::Headers{{"X-Warden-Replica", "1"}});
  ASSERT_TRUE(s->wait_started());
  ASSERT_TRUE(wait_until([&] { return sim_running(sim->port(), 1) == 1; }));
  s->release();  // the client hangs up mid-stream
  EXPECT_TRUE(wait_until([&] { return sim_running(sim->port(), 1) == 0; }, std::chrono::seconds(5)));
  EXPECT_TRUE(wait_until([&] { return num(replica_of(card(w.port), 1).at("in_flight")) == 0; }));
  s.reset();
  Client c(w.port);
  auto metrics = c.get("/metrics").body;
  EXPECT_NE(
      metrics.find("lm_warden_requests_total{model=\"m\",replica=\"1\",route=\"pinned\",status=\"499\"} 1"),
      std::string::npos)
      << metrics;
}

TEST(GatewayRouting, MultiUrlModeRoutesAroundAKilledReplicaAndTakesItBack) {
  auto a = start_sim(1);
  auto b = start_sim(1);
  const int b_port = b->port();
  Warden w("  - name: m\n    served_model_name: " + kServed +
           "\n    max_num_seqs: 32\n    replicas: { urls: [http://127.0.0.1:" + std::to_string(a->port()) +
           ", http://127.0.0.1:" + std::to_string(b_port) + "] }\n");
  Client c(w.port);
  std::set<std::string> placed;
  std::string on_b;
  for (int i = 0; i < 2; ++i) {
    auto r = chat(c, "multi-" + std::to_string(i));
    ASSERT_EQ(r.status, 200u);
    placed.insert(r.header("x-warden-replica"));
    if (r.header("x-warden-replica") == "1") {
      on_b = "multi-" + std::to_string(i);
    }
  }
  ASSERT_EQ(placed.size(), 2u);  // one conversation per server
  ASSERT_EQ(chat(c, on_b).header("x-warden-route"), "sticky");

  b->stop();  // replica 1 dies
  // Its conversation is answered at once by the other server (retry or failover), never an error.
  auto r = chat(c, on_b);
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.header("x-warden-replica"), "0");
  EXPECT_EQ(r.header("x-warden-route"), "failover");
  ASSERT_TRUE(wait_until([&] { return !replica_of(card(w.port), 1).at("healthy").as_bool(); }));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(chat(c, "while-down-" + std::to_string(i)).header("x-warden-replica"), "0");
  }

  // The server comes back on the same port: healthy again, and new conversations go to it (it is idle).
  auto b2 = start_sim(1, 1.0, b_port);
  ASSERT_TRUE(wait_until([&] { return replica_of(card(w.port), 1).at("healthy").as_bool(); }));
  auto back = chat(c, "after-recovery");
  EXPECT_EQ(back.header("x-warden-replica"), "1");
  EXPECT_EQ(back.header("x-warden-route"), "new");
}

TEST(GatewayRouting, UsageOnlyChunkIsDroppedUnlessAskedForAndStatsAreKept) {
  auto sim = start_sim(2);
  Warden w(dp_model(sim->port(), 2));
  Client c(w.port);
  auto plain = c.post("/v1/chat/completions", chat_body("count me", 5));
  ASSERT_EQ(plain.status, 200u);
  auto events = test_support::parse_sse(plain.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().data, "[DONE]");
  for (const auto& e : events) {
    EXPECT_EQ(e.data.find("\"usage\""), std::string::npos) << e.data;
  }
  auto asked = c.post("/v1/chat/completions",
                      R"({"model":"m","max_tokens":5,"stream":true,"stream_options":{"include_usage":true},)"
                      R"("messages":[{"role":"user","content":"count me"}]})");
  EXPECT_NE(asked.body.find("\"usage\""), std::string::npos);
  auto whole = c.post("/v1/chat/completions", chat_body("count me", 5, false));
  EXPECT_NE(whole.body.find("\"usage\""), std::string::npos);

  // Three requests with prompt and completion tokens, the second and third partly from the cache.
  auto stats = boost::json::parse(c.get("/api/stats?model=m&window=60").body).as_object();
  const auto& summary = stats.at("summary").as_object();
  EXPECT_EQ(num(summary.at("requests")), 3);
  EXPECT_EQ(num(summary.at("completion")), 15);
  EXPECT_GT(num(summary.at("prompt_computed")) + num(summary.at("prompt_cached")), 0);
  EXPECT_EQ(stats.at("series").at("t").as_array().size(), 60u);
  auto metrics = c.get("/metrics").body;
  EXPECT_NE(metrics.find("lm_warden_completion_tokens_total{model=\"m\"} 15"), std::string::npos) << metrics;
}

TEST(GatewayRouting, CountTokensGoesHomeWithoutCountingAsARoutedRequest) {
  auto sim = start_sim(4);
  Warden w(dp_model(sim->port(), 4));
  Client c(w.port);
  const warden::net::Headers h{{"X-Claude-Code-Session-Id", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"},
                               {"anthropic-version", "2023-06-01"}};
  const std::string body =
      R"({"model":"m","max_tokens":3,"messages":[{"role":"user","content":"hi there"}]})";
  auto first = c.post("/v1/messages", body, h);
  ASSERT_EQ(first.status, 200u) << first.body;
  auto count = c.post("/v1/messages/count_tokens",
                      R"({"model":"m","messages":[{"role":"user","content":"hi there"}]})", h);
  ASSERT_EQ(count.status, 200u) << count.body;
  EXPECT_GT(num(boost::json::parse(count.body).at("input_tokens")), 0);
  EXPECT_EQ(count.header("x-warden-replica"), first.header("x-warden-replica"));
  auto k = card(w.port);
  std::int64_t routed = 0;
  for (int i = 0; i < 4; ++i) {
    const auto& r = replica_of(k, i);
    routed += num(r.at("new")) + num(r.at("sticky")) + num(r.at("spilled_in")) + num(r.at("client_pinned"));
  }
  EXPECT_EQ(routed, 1);
}
