// The admin endpoints through an AdminContext over plain objects: no sockets, no processes.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>

#include "gateway/admin/admin_context.hpp"

using namespace warden::gateway;
namespace http = boost::beast::http;

namespace {

class FakeGateway final : public AdminContext {
 public:
  explicit FakeGateway(std::string_view yaml) : config_(parsed(yaml)), stats_(std::chrono::seconds(3600)) {
    for (const auto& m : config_.models) {
      models_.push_back(std::make_unique<ModelRuntime>(m, 3, io_.get_executor(), rng_));
    }
  }

  const Config& config() const override { return config_; }
  std::int64_t started_unix() const override { return 1'795'944'011; }
  std::int64_t unix_now() const override { return 1'795'944'111; }
  std::span<const std::unique_ptr<ModelRuntime>> models() override { return models_; }
  const StatsStore& stats() const override { return stats_; }
  std::string metrics_text() override { return "warden_up 1\n"; }
  HeldRequests queued(const ModelRuntime&) const override { return {2, 1}; }
  void routing_changed(ModelRuntime&) override { ++routing_changes; }
  boost::json::value launch_status(std::string_view) const override { return nullptr; }
  boost::json::value shared_state() const override { return nullptr; }
  ReloadOutcome reload() override {
    ++reloads;
    return reload_outcome;
  }
  std::optional<boost::json::object> engine_logs(std::string_view, std::size_t) const override {
    return std::nullopt;
  }

  ModelRuntime& model() { return *models_.front(); }
  int routing_changes = 0;
  int reloads = 0;
  ReloadOutcome reload_outcome;

 private:
  static Config parsed(std::string_view yaml) {
    auto r = parse_config(yaml, "t.yaml");
    EXPECT_TRUE(r.ok()) << r.error_text();
    return *r.config;
  }
  boost::asio::io_context io_;  // the admission queues' timers, never run here
  warden::core::SplitMixRng rng_;
  Config config_;
  StatsStore stats_;
  std::vector<std::unique_ptr<ModelRuntime>> models_;
};

const char* kModels = R"(models:
  - name: m
    max_num_seqs: 32
    replicas: { data_parallel: { url: http://127.0.0.1:9000, size: 2 } }
)";

std::string with(std::string_view top) {
  return std::string(top) + kModels;
}

warden::net::Request request(http::verb method, std::string_view target, std::string body = "",
                             std::string_view bearer = "") {
  warden::net::Request req{method, target, 11};
  if (!bearer.empty()) {
    req.set(http::field::authorization, "Bearer " + std::string(bearer));
  }
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

boost::json::object body_of(const warden::net::Response& r) {
  return boost::json::parse(r.body()).as_object();
}

// An error reply in the admin API's shape: {"error": {"message", "type"}}.
std::string error_type(const warden::net::Response& r) {
  const auto o = body_of(r);
  EXPECT_TRUE(o.at("error").at("message").is_string()) << r.body();
  return std::string(o.at("error").at("type").as_string());
}

}  // namespace

TEST(AdminRoutes, RoutingPatchNeedsTheTokenAndAValidBody) {
  FakeGateway g(with("admin_token: secret\n"));
  const auto patch = [&](std::string body, std::string_view bearer = "secret") {
    return answer_admin(g, request(http::verb::patch, "/api/models/m/routing", std::move(body), bearer));
  };
  EXPECT_EQ(patch(R"({"affinity": false})", "").result_int(), 401u);
  EXPECT_EQ(patch(R"({"affinity": false})", "wrong").result_int(), 401u);
  EXPECT_EQ(
      answer_admin(g, request(http::verb::patch, "/api/models/nope/routing", "{}", "secret")).result_int(),
      404u);
  for (const char* bad :
       {"", "{}", R"({"affinity": "no"})", R"({"policy": "vllm-lb"})", R"({"colour": 1})"}) {
    const auto r = patch(bad);
    EXPECT_EQ(r.result_int(), 400u) << bad;
    EXPECT_EQ(error_type(r), "invalid_request_error") << bad;
  }
  EXPECT_EQ(g.routing_changes, 0) << "a refused change changes nothing";
  EXPECT_TRUE(g.model().router().routing_config().affinity);

  const auto ok = patch(R"({"affinity": false, "admission": {"mode": "auto", "max_queue": 5}})");
  ASSERT_EQ(ok.result_int(), 200u) << ok.body();
  EXPECT_EQ(g.routing_changes, 1);
  const auto routing = g.model().router().routing_config();
  EXPECT_FALSE(routing.affinity);
  EXPECT_TRUE(routing.admission.enabled);
  EXPECT_EQ(routing.admission.max_queue, 5u);
  const auto card = body_of(ok);
  EXPECT_FALSE(card.at("routing").at("affinity").as_bool());
  EXPECT_EQ(card.at("routing").at("admission").at("max_queue").to_number<int>(), 5);
  EXPECT_EQ(card.at("routing").at("admission").at("queued").to_number<int>(), 2);

  // A wrong method is told what PATCH takes: every setting the admin scope of the table lets it change.
  const auto get = answer_admin(g, request(http::verb::get, "/api/models/m/routing"));
  EXPECT_EQ(get.result_int(), 405u);
  EXPECT_EQ(body_of(get).at("error").at("message").as_string(),
            "use PATCH with {\"affinity\": bool, \"spill_threshold\": \"auto\"|N, \"rebalance\": bool, "
            "\"threads\": bool, \"cost_spill\": \"on\"|\"off\"|{...}, \"admission\": \"off\"|\"auto\"|{...}, "
            "\"task_admission\": \"off\"|\"auto\"|{...}}");
}

TEST(AdminRoutes, WithoutAnAdminTokenChangesAreRefused) {
  FakeGateway g(kModels);
  const auto r =
      answer_admin(g, request(http::verb::patch, "/api/models/m/routing", R"({"affinity": false})"));
  EXPECT_EQ(r.result_int(), 403u);
  EXPECT_EQ(error_type(r), "permission_error");
  EXPECT_EQ(g.routing_changes, 0);
}

TEST(AdminRoutes, ModelsAndModelShapes) {
  FakeGateway g(kModels);
  const auto list = answer_admin(g, request(http::verb::get, "/api/models"));
  ASSERT_EQ(list.result_int(), 200u);
  const auto o = body_of(list);
  EXPECT_EQ(o.at("since").as_string(), "2026-11-29T09:20:11Z");
  ASSERT_EQ(o.at("models").as_array().size(), 1u);
  const auto& card = o.at("models").as_array().at(0).as_object();
  EXPECT_EQ(card.at("name").as_string(), "m");
  EXPECT_TRUE(card.at("launch").is_null());
  EXPECT_TRUE(card.at("shared_state").is_null());
  EXPECT_EQ(card.at("routing").at("replicas").as_array().size(), 2u);
  EXPECT_EQ(card.at("routing").at("spill_threshold").as_string(), "auto");
  EXPECT_EQ(card.at("routing").at("spill_threshold_resolved").to_number<int>(), 8);

  const auto one = answer_admin(g, request(http::verb::get, "/api/models/m"));
  ASSERT_EQ(one.result_int(), 200u);
  EXPECT_EQ(body_of(one), card);
  const auto missing = answer_admin(g, request(http::verb::get, "/api/models/nope"));
  EXPECT_EQ(missing.result_int(), 404u);
  EXPECT_EQ(error_type(missing), "invalid_request_error");
  EXPECT_EQ(answer_admin(g, request(http::verb::get, "/api/models/m/logs")).result_int(), 404u)
      << "no launch: section";
}

// With api_keys and no auth section, reads need a key as well: the sessions page among them.
TEST(AdminRoutes, ReadsNeedAKeyByDefaultWhenApiKeysAreSet) {
  FakeGateway g(with("api_keys: [k1]\n"));
  EXPECT_EQ(answer_admin(g, request(http::verb::get, "/api/models/m/sessions")).result_int(), 401u);
  EXPECT_EQ(answer_admin(g, request(http::verb::get, "/api/models/m/sessions", "", "k1")).result_int(), 200u);
  FakeGateway open(with("api_keys: [k1]\nauth: { reads: false }\n"));
  EXPECT_EQ(answer_admin(open, request(http::verb::get, "/api/models/m/sessions")).result_int(), 200u);
}

TEST(AdminRoutes, ReadsNeedAKeyWhenAuthReadsIsSet) {
  FakeGateway g(with("admin_token: secret\napi_keys: [k1]\nauth: { reads: true }\n"));
  const auto refused = answer_admin(g, request(http::verb::get, "/api/models"));
  EXPECT_EQ(refused.result_int(), 401u);
  EXPECT_EQ(error_type(refused), "authentication_error");
  EXPECT_EQ(answer_admin(g, request(http::verb::get, "/api/models", "", "secret")).result_int(), 200u);
  EXPECT_EQ(answer_admin(g, request(http::verb::get, "/api/models", "", "k1")).result_int(), 200u);
  EXPECT_EQ(answer_admin(g, request(http::verb::get, "/health")).result_int(), 200u) << "health stays open";
  const auto metrics = answer_admin(g, request(http::verb::get, "/metrics", "", "k1"));
  EXPECT_EQ(metrics.body(), "warden_up 1\n");
}

TEST(AdminRoutes, ARefusalDeepInAHandlerEndsItWithTheRefusalsReply) {
  FakeGateway g(with("admin_token: secret\n"));
  // The token is checked, then the model looked up: the lookup's 404 is what answers, and nothing changes.
  const auto missing = answer_admin(
      g, request(http::verb::patch, "/api/models/nope/routing", R"({"affinity": false})", "secret"));
  EXPECT_EQ(missing.result_int(), 404u);
  EXPECT_EQ(error_type(missing), "invalid_request_error");
  EXPECT_EQ(body_of(missing).at("error").at("message").as_string(), "no model named 'nope' is configured");
  EXPECT_EQ(g.routing_changes, 0);
  // A model that exists, then a bad parameter after it: the parameter's 400.
  const auto bad_limit = answer_admin(g, request(http::verb::get, "/api/models/m/sessions?limit=0"));
  EXPECT_EQ(bad_limit.result_int(), 400u);
  EXPECT_EQ(body_of(bad_limit).at("error").at("message").as_string(),
            "limit must be an integer from 1 to 100");
  EXPECT_EQ(answer_admin(g, request(http::verb::get, "/api/models/m/sessions?limit=3")).result_int(), 200u);
}

// Sessions with full thread tables (the 32 threads a session keeps, and its main one): a read of them is a
// page of at most 100 sessions, under 1 MiB, with the offset of the next; a larger limit is refused.
TEST(AdminRoutes, TheSessionsReadIsABoundedPage) {
  FakeGateway g(kModels);
  warden::core::SplitMixRng rng;
  constexpr std::uint64_t sessions = 250;
  for (std::uint64_t s = 1; s <= sessions; ++s) {
    for (std::uint64_t t = 0; t <= 32; ++t) {
      warden::core::RequestFacts f;
      f.session = warden::core::SessionKey{t == 0 ? s : (s << 20) + t};
      f.thread.session = s;
      f.prompt_tokens = 100;
      const auto now = std::chrono::seconds(s);
      const auto d = g.model().route(f, std::nullopt, true, rng, now);
      ASSERT_TRUE(d.ok());
      g.model().finish(static_cast<int>(*d.replica));
    }
  }
  const auto too_many = answer_admin(g, request(http::verb::get, "/api/models/m/sessions?limit=10000"));
  EXPECT_EQ(too_many.result_int(), 400u) << too_many.body().size() << " bytes";
  const auto first = answer_admin(g, request(http::verb::get, "/api/models/m/sessions?limit=100"));
  ASSERT_EQ(first.result_int(), 200u);
  EXPECT_LT(first.body().size(), 1u << 20);
  const auto page = body_of(first);
  ASSERT_EQ(page.at("sessions").as_array().size(), 100u);
  EXPECT_GE(page.at("sessions").as_array()[0].at("threads").as_array().size(), 32u) << "full thread tables";
  EXPECT_EQ(page.at("next_offset").to_number<int>(), 100);
  const auto last =
      body_of(answer_admin(g, request(http::verb::get, "/api/models/m/sessions?limit=100&offset=200")));
  EXPECT_EQ(last.at("sessions").as_array().size(), 50u);
  EXPECT_TRUE(last.at("next_offset").is_null());
  EXPECT_EQ(answer_admin(g, request(http::verb::get, "/api/models/m/sessions?offset=-1")).result_int(), 400u);
}

// Readers that loop wait their turn: a page every 100 ms in the order the reads came, and a read that would
// wait beyond 2 s is refused, told when a turn within 2 s will be free.
TEST(PageTurns, ReadsTakeTurnsAPageEvery100MsAndWaitAtMostTwoSeconds) {
  using namespace std::chrono_literals;
  PageTurns turns;
  const PageTurns::Clock::time_point t0 = PageTurns::Clock::time_point{} + 1h;
  const PageTurns::Turn first = turns.take(t0);
  EXPECT_TRUE(first.granted);
  EXPECT_EQ(first.at, t0) << "no wait while no turn is given";
  for (int i = 1; i <= 20; ++i) {
    const PageTurns::Turn t = turns.take(t0);
    ASSERT_TRUE(t.granted) << i;
    EXPECT_EQ(t.at, t0 + i * 100ms) << "in order, 100 ms apart";
  }
  const PageTurns::Turn refused = turns.take(t0 + 1ms);
  EXPECT_FALSE(refused.granted) << "the 22nd read in the same instant would wait beyond 2 s";
  EXPECT_EQ(refused.retry_after, 1s);
  EXPECT_TRUE(turns.take(t0 + 100ms).granted) << "a turn within 2 s again";
  const PageTurns::Turn later = turns.take(t0 + 10s);
  EXPECT_TRUE(later.granted);
  EXPECT_EQ(later.at, t0 + 10s) << "the turns given are all past: at once";
}

TEST(AdminRoutes, OnlySessionsReadsWaitTheirTurnAndOneRefusedIsA429WithRetryAfter) {
  EXPECT_TRUE(paced_read(request(http::verb::get, "/api/models/m/sessions?limit=100")));
  EXPECT_TRUE(paced_read(request(http::verb::head, "/api/models/m/sessions")));
  EXPECT_FALSE(paced_read(request(http::verb::get, "/api/models/m")));
  EXPECT_FALSE(paced_read(request(http::verb::get, "/api/models/m/logs")));
  EXPECT_FALSE(paced_read(request(http::verb::get, "/v1/models")));
  const auto busy =
      answer_no_turn(request(http::verb::get, "/api/models/m/sessions"), std::chrono::seconds(3));
  EXPECT_EQ(busy.result_int(), 429u);
  EXPECT_EQ(busy[http::field::retry_after], "3");
  const auto error = body_of(busy).at("error");
  EXPECT_NE(std::string(error.at("message").as_string()).find("retry in 3 s"), std::string::npos);
  EXPECT_EQ(error.at("type").as_string(), "rate_limit_error");
}

TEST(AdminRoutes, StatsWindowIsChecked) {
  FakeGateway g(kModels);
  EXPECT_EQ(answer_admin(g, request(http::verb::get, "/api/stats?window=0")).result_int(), 400u);
  EXPECT_EQ(answer_admin(g, request(http::verb::get, "/api/stats?model=nope")).result_int(), 404u);
  const auto r = answer_admin(g, request(http::verb::get, "/api/stats?window=60"));
  ASSERT_EQ(r.result_int(), 200u);
  const auto o = body_of(r);
  EXPECT_EQ(o.at("model").as_string(), "m");
  EXPECT_EQ(o.at("window").to_number<int>(), 60);
  EXPECT_EQ(o.at("series").at("t").as_array().size(), 60u);
}
