// Every bad input answered in the client's own format and status; failures upstream never hang; stats
// survive a restart; a bad config stops the warden with a clear message.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <functional>
#include <stdexcept>
#include <thread>

#include "gateway_support.hpp"
#include "net/server.hpp"

using namespace gateway_test;

TEST(GatewayErrors, BadRequestsInTheClientsFormat) {
  auto sim = start_sim(2);
  Warden w(dp_model(sim->port(), 2), "max_body_size: 4KiB\n");
  Client c(w.port);
  const warden::net::Headers anth{{"anthropic-version", "2023-06-01"}};

  expect_openai_error(c.post("/v1/chat/completions", "{\"model\": \"m\", "), 400);
  expect_anthropic_error(c.post("/v1/messages", "{\"model\": \"m\", ", anth), 400);
  expect_openai_error(c.post("/v1/responses", "[1, 2]"), 400);
  expect_openai_error(c.post("/v1/chat/completions", R"({"messages": []})"), 400);
  expect_anthropic_error(c.post("/v1/messages", R"({"max_tokens": 3, "messages": []})", anth), 400);
  expect_openai_error(c.post("/v1/completions", R"({"model": 7, "prompt": "x"})"), 400);

  auto unknown = c.post("/v1/chat/completions", chat_body("hi", 3, false, "gpt-9"));
  expect_openai_error(unknown, 404);
  EXPECT_NE(unknown.body.find("gpt-9"), std::string::npos);
  expect_anthropic_error(c.post("/v1/messages", R"({"model":"claude-x","max_tokens":3,"messages":[]})", anth),
                         404);

  expect_openai_error(c.post("/v1/chat/completions", chat_body("hi"), {{"X-Warden-Replica", "two"}}), 400);
  expect_openai_error(c.post("/v1/chat/completions", chat_body("hi"), {{"X-Warden-Replica", "2"}}),
                      400);  // 0..1
  expect_anthropic_error(c.post("/v1/messages", R"({"model":"m","max_tokens":3,"messages":[]})",
                                {{"X-data-parallel-rank", "-1"}}),
                         400);

  auto get = c.get("/v1/chat/completions");
  expect_openai_error(get, 405);

  // Above max_body_size: 413, and the connection is closed; a new client gets through again.
  const std::string big = chat_body(std::string(8000, 'x'));
  auto too_large = test_support::raw_exchange(
      w.port,
      "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(big.size()) + "\r\n\r\n" + big,
      std::chrono::seconds(5));
  EXPECT_EQ(test_support::raw_status(too_large), 413) << too_large;
  // In the format of the API the path names (the body was never read): Anthropic here, OpenAI below.
  const auto json_of_raw = raw_json;
  const auto anthropic_413 = json_of_raw(too_large);
  EXPECT_EQ(anthropic_413.at("type").as_string(), "error") << too_large;
  EXPECT_EQ(anthropic_413.at("error").at("type").as_string(), "request_too_large") << too_large;
  const auto openai_raw =
      test_support::raw_exchange(w.port,
                                 "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                 "application/json\r\nContent-Length: " +
                                     std::to_string(big.size()) + "\r\n\r\n" + big,
                                 std::chrono::seconds(5));
  EXPECT_EQ(test_support::raw_status(openai_raw), 413) << openai_raw;
  const auto openai_413 = json_of_raw(openai_raw);
  EXPECT_FALSE(openai_413.contains("type")) << openai_raw;
  EXPECT_TRUE(openai_413.at("error").at("message").is_string()) << openai_raw;
  Client again(w.port);
  EXPECT_EQ(again.post("/v1/chat/completions", chat_body("small")).status, 200u);

  // Nothing above reached a replica.
  auto k = card(w.port);
  EXPECT_EQ(num(replica_of(k, 0).at("new")) + num(replica_of(k, 1).at("new")), 1);
}

// The server's own 400 and 431, sent before any handler runs, come in the format the request line's path
// implies, and close the connection.
TEST(GatewayErrors, HttpLevelErrorsInTheFormatThePathImplies) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1));
  const auto exchange = [&](const std::string& target, const std::string& header_line) {
    return test_support::raw_exchange(w.port,
                                      "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + header_line +
                                          "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
                                      std::chrono::seconds(10));
  };
  const std::string no_colon = "X-No-Colon-Here";
  const std::string oversized = "X-Big: " + std::string(80u << 10, 'h');  // the header limit is 64 KiB
  expect_raw_error(exchange("/v1/messages", no_colon), 400, true);
  expect_raw_error(exchange("/v1/messages", oversized), 431, true);
  expect_raw_error(exchange("/v1/chat/completions", no_colon), 400, false);
  expect_raw_error(exchange("/v1/chat/completions", oversized), 431, false);
  Client again(w.port);
  EXPECT_EQ(again.post("/v1/chat/completions", chat_body("still serving")).status, 200u);
}

TEST(GatewayErrors, ApiKeysAreRequiredWhenConfigured) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), "api_keys: [k-one, k-two]\n");
  Client c(w.port);
  expect_openai_error(c.post("/v1/chat/completions", chat_body("hi")), 401);
  expect_anthropic_error(
      c.post("/v1/messages", R"({"model":"m","max_tokens":3,"messages":[]})", {{"x-api-key", "wrong"}}), 401);
  EXPECT_EQ(c.post("/v1/chat/completions", chat_body("hi"), {{"Authorization", "Bearer k-two"}}).status,
            200u);
  EXPECT_EQ(
      c.post("/v1/messages", R"({"model":"m","max_tokens":3,"messages":[{"role":"user","content":"hi"}]})",
             {{"x-api-key", "k-one"}, {"anthropic-version", "2023-06-01"}})
          .status,
      200u);
  EXPECT_EQ(c.get("/health").status, 200u);  // observability needs no key
}

TEST(GatewayErrors, DeadReplicasGive502Then503NeverAHang) {
  // A port nothing listens on: bind one, remember it, close it.
  int dead_port = 0;
  {
    auto sim = start_sim(1);
    dead_port = sim->port();
  }
  Warden w(dp_model(dead_port, 2));
  Client c(w.port);
  // Before the poller has given up on it: connect refused, retried once, then 502 in the client's format.
  auto first =
      c.post("/v1/messages", R"({"model":"m","max_tokens":3,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_TRUE(first.status == 502u || first.status == 503u) << first.status;
  expect_anthropic_error(first, first.status);
  // Once marked unhealthy: 503 at once.
  ASSERT_TRUE(wait_until([&] { return num(card(w.port).at("healthy_replicas")) == 0; }));
  expect_openai_error(c.post("/v1/chat/completions", chat_body("hi")), 503);
}

namespace {

// An in-process engine on its own thread: answers /metrics like vLLM and every generation with the
// stream body it was given.
class ScriptedEngine {
 public:
  using Body = std::function<warden::net::asio::awaitable<void>(warden::net::StreamWriter&)>;

  explicit ScriptedEngine(Body body)
      : body_(std::move(body)),
        server_(
            ioc_, {},
            [this](warden::net::Request& req,
                   const warden::net::ConnectionInfo&) -> warden::net::asio::awaitable<warden::net::Reply> {
              if (req.target() == "/metrics") {
                std::string text;
                for (const char* name :
                     {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"}) {
                  text += std::string(name) + "{engine=\"0\",model_name=\"" + kServed + "\"} 0\n";
                }
                co_return warden::net::make_response(req, 200, text, "text/plain; version=0.0.4");
              }
              warden::net::StreamReply r = warden::net::sse_reply(req);
              r.body = body_;
              co_return r;
            }) {
    port = server_.listen()->port();
    warden::net::asio::co_spawn(ioc_, server_.run(), [](std::exception_ptr) {});
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~ScriptedEngine() {
    warden::net::asio::post(ioc_, [this] { server_.stop(); });
    thread_.join();
  }
  int port = 0;

 private:
  Body body_;
  warden::net::asio::io_context ioc_;
  warden::net::Server server_;
  std::thread thread_;
};

// Breaks off every generation after its response header, before any event.
ScriptedEngine::Body breaking_body() {
  return [](warden::net::StreamWriter&) -> warden::net::asio::awaitable<void> {
    throw std::runtime_error("engine died mid-request");  // header sent, then the connection drops
    co_return;
  };
}

std::string one_replica(int port) {
  return "  - name: m\n    served_model_name: " + kServed +
         "\n    replicas: { urls: [http://127.0.0.1:" + std::to_string(port) + "] }\n";
}

}  // namespace

TEST(GatewayErrors, ReplicaThatBreaksOffBeforeItsFirstEventGives502) {
  ScriptedEngine engine(breaking_body());
  Warden w(one_replica(engine.port));
  ASSERT_TRUE(wait_until([&] { return num(card(w.port).at("healthy_replicas")) == 1; }));
  Client c(w.port);
  // Nothing reached the client yet, so it gets a proper error in its own format, not a cut-off stream.
  expect_openai_error(c.post("/v1/chat/completions", chat_body("hi")), 502);
  expect_anthropic_error(
      c.post("/v1/messages",
             R"({"model":"m","max_tokens":3,"stream":true,"messages":[{"role":"user","content":"x"}]})"),
      502);
}

TEST(GatewayErrors, AStreamBrokenOffBeforeItsFirstEventIsRetriedElsewhere) {
  // Nothing reached the client yet, so the request can still go to another replica (route failover).
  ScriptedEngine engine(breaking_body());
  auto sim = start_sim(1);
  Warden w("  - name: m\n    served_model_name: " + kServed + "\n    replicas: { urls: [http://127.0.0.1:" +
           std::to_string(engine.port) + ", http://127.0.0.1:" + std::to_string(sim->port()) + "] }\n");
  ASSERT_TRUE(wait_until([&] { return num(card(w.port).at("healthy_replicas")) == 2; }));
  Client c(w.port);
  int failovers = 0;
  for (int i = 0; i < 4; ++i) {  // new conversations spread over both replicas: some meet the broken one
    auto r = c.post("/v1/chat/completions", chat_body("conversation " + std::to_string(i)),
                    {{"X-Warden-Session", "s" + std::to_string(i)}});
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.header("x-warden-replica"), "1");
    EXPECT_FALSE(test_support::parse_sse(r.body).empty());
    failovers += r.header("x-warden-route") == "failover" ? 1 : 0;
  }
  EXPECT_GE(failovers, 1);
}

TEST(GatewayErrors, UsageChunkSplitAcrossReadsIsStillDroppedAndCounted) {
  // An engine whose stream arrives in fragments cut inside an event and inside the word "usage" (a
  // pause between writes makes the warden read them apart): the usage chunk is still recognised whole.
  const std::vector<std::string> fragments = {
      R"(data: {"choices":[{"index":0,"delta":{"role":"assistant","con)", "tent\":\"\"}}]}\n\n",
      R"(data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]})"
      "\n\n"
      R"(data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]})"
      "\n\n"
      R"(data: {"choices":[],"us)",
      R"(age":{"prompt_tokens":7,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}})"
      "\n\n",
      "data: [DONE]\n\n"};
  ScriptedEngine engine([&fragments](warden::net::StreamWriter& w) -> warden::net::asio::awaitable<void> {
    warden::net::asio::steady_timer pause(co_await warden::net::asio::this_coro::executor);
    for (const auto& f : fragments) {
      co_await w.write(f);
      pause.expires_after(std::chrono::milliseconds(15));
      co_await pause.async_wait(warden::net::asio::use_awaitable);
    }
  });
  Warden w(one_replica(engine.port));
  ASSERT_TRUE(wait_until([&] { return num(card(w.port).at("healthy_replicas")) == 1; }));
  Client c(w.port);
  auto plain = c.post("/v1/chat/completions", chat_body("hi"));
  ASSERT_EQ(plain.status, 200u) << plain.body;
  std::vector<std::string> data;
  for (const auto& e : test_support::parse_sse(plain.body)) {
    data.push_back(e.data);
  }
  ASSERT_EQ(data.size(), 4u) << plain.body;  // role, "Hel", "lo", [DONE]: the usage chunk is gone
  EXPECT_NE(data[1].find("Hel"), std::string::npos);
  EXPECT_EQ(data.back(), "[DONE]");
  EXPECT_EQ(plain.body.find("usage"), std::string::npos) << plain.body;
  auto asked = c.post("/v1/chat/completions",
                      R"({"model":"m","max_tokens":5,"stream":true,"stream_options":{"include_usage":true},)"
                      R"("messages":[{"role":"user","content":"hi"}]})");
  ASSERT_EQ(asked.status, 200u);
  EXPECT_EQ(test_support::parse_sse(asked.body).size(), 5u) << asked.body;
  EXPECT_NE(asked.body.find("\"usage\":{\"prompt_tokens\":7"), std::string::npos) << asked.body;
  // Both requests' usage was read, dropped or not.
  auto stats = boost::json::parse(c.get("/api/stats?model=m&window=60").body).as_object();
  const auto& summary = stats.at("summary").as_object();
  EXPECT_EQ(num(summary.at("requests")), 2);
  EXPECT_EQ(num(summary.at("completion")), 4);
  EXPECT_EQ(num(summary.at("prompt_cached")), 8);
  EXPECT_EQ(num(summary.at("prompt_computed")), 6);
}

TEST(GatewayErrors, StatsHistorySurvivesARestart) {
  auto sim = start_sim(2);
  TempDir state;
  {
    Warden w(dp_model(sim->port(), 2), "", state.path.string());
    Client c(w.port);
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(c.post("/v1/chat/completions", chat_body("remember me", 4, false)).status, 200u);
    }
    w.proc->stop();  // SIGTERM: the history is flushed on the way out
  }
  Warden again(dp_model(sim->port(), 2), "", state.path.string());
  Client c(again.port);
  auto stats = boost::json::parse(c.get("/api/stats?model=m&window=600").body).as_object();
  EXPECT_EQ(num(stats.at("summary").at("requests")), 3);
  EXPECT_EQ(num(stats.at("summary").at("completion")), 12);
  // Routing counters, unlike the history, start again at zero.
  auto k = card(again.port);
  EXPECT_EQ(num(replica_of(k, 0).at("new")) + num(replica_of(k, 1).at("new")), 0);
}

TEST(GatewayErrors, InvalidConfigStopsTheWardenWithFileAndLine) {
  TempDir dir;
  const auto cfg = dir.path / "bad.yaml";
  std::ofstream(cfg) << "listen: 127.0.0.1:0\nmodels:\n  - name: m\n    replicas: { urls: [ftp://x:1] }\n";
  ChildProcess p({WARDEN_BINARY, "serve", "--config", cfg.string()});
  auto code = p.wait_exit(std::chrono::seconds(10));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  EXPECT_NE(p.stderr_text().find(cfg.string() + ":4:"), std::string::npos) << p.stderr_text();
  EXPECT_NE(p.stderr_text().find("expected http://HOST:PORT"), std::string::npos) << p.stderr_text();
}

TEST(GatewayErrors, AdminApiValidatesItsInput) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), "stats_retention: 10m\n");
  Client c(w.port);
  namespace http = boost::beast::http;
  auto patch = [&](const std::string& target, const std::string& body, warden::net::Headers h) {
    auto r = c.raw().request(http::verb::patch, target, body, h);
    EXPECT_TRUE(r);
    return r ? r->status : 0u;
  };
  const warden::net::Headers token{{"Authorization", "Bearer secret"}};
  EXPECT_EQ(patch("/api/models/m/routing", R"({"affinity": false})", {{"Authorization", "Bearer nope"}}),
            401u);
  EXPECT_EQ(patch("/api/models/nope/routing", R"({"affinity": false})", token), 404u);
  EXPECT_EQ(patch("/api/models/m/routing", R"({"spill_threshold": 0})", token), 400u);
  EXPECT_EQ(patch("/api/models/m/routing", R"({"colour": "red"})", token), 400u);
  EXPECT_EQ(patch("/api/models/m/routing", R"({"spill_threshold": 3})", token), 200u);
  EXPECT_EQ(card(w.port).at("routing").at("spill_threshold").to_number<int>(), 3);
  EXPECT_EQ(patch("/api/models/m/routing", R"({"rebalance": "yes"})", token), 400u);
  EXPECT_EQ(patch("/api/models/m/routing", R"({"cost_spill": true})", token), 400u);
  EXPECT_EQ(patch("/api/models/m/routing", R"({"cost_spill": "on"})", token), 200u);
  EXPECT_EQ(card(w.port).at("routing").at("cost_spill").at("mode").as_string(), "on");
  // The admin API's errors are typed by the one status->type table of every OpenAI-shaped error.
  expect_openai_error(c.get("/api/models/nope"), 404);
  expect_openai_error(c.get("/api/stats?model=m&window=abc"), 400);
  expect_openai_error(c.get("/api/stats?model=zzz"), 404);
  // The stats window never reaches past what is kept: by default, and when asked for more.
  for (const char* target : {"/api/stats?model=m", "/api/stats?model=m&window=7200"}) {
    auto st = boost::json::parse(c.get(target).body).as_object();
    EXPECT_EQ(st.at("window").to_number<int>(), 600) << target;
  }
  auto models = boost::json::parse(c.get("/v1/models").body).as_object();
  EXPECT_EQ(models.at("data").as_array()[0].at("id").as_string(), "m");
  auto list = boost::json::parse(c.get("/api/models").body).as_object();
  EXPECT_EQ(list.at("models").as_array().size(), 1u);
}
