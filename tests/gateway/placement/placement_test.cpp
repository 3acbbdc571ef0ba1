// A request's placement over plain objects: a model's runtime built from a configuration, the record, the
// warden's metrics and guard, requests inspected from their bodies; no socket, no HTTP. Each test holds one
// rule of placement: where a retry goes, what admission holds and how a held request leaves the queue,
// what a request counts on its replica and when it gives it back, what a failure does to its replica.
#include "gateway/placement/placement.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <string>
#include <vector>

using namespace warden;
using namespace warden::gateway;
using namespace std::chrono_literals;

namespace {

const char* kTwoReplicas = R"(models:
  - name: m
    served_model_name: served
    replicas: { urls: [http://127.0.0.1:9001, http://127.0.0.1:9002] }
)";

Config config_of(std::string_view yaml) {
  auto r = parse_config(yaml, "t.yaml");
  EXPECT_TRUE(r.ok()) << r.error_text();
  return *r.config;
}

// A chat request of `session` (none: no session) with a prompt of about `prompt_tokens`, pinned to `pin`.
struct Ask {
  std::string session;
  std::size_t prompt_tokens = 100;
  std::string pin;
};

// A placement and its record.
struct Request {
  RequestRecord record;
  Placement placement;
  std::string body;            // its prompt start is read from it
  std::optional<bool> placed;  // what place() answered, once it has
  Request(PlacementContext ctx) : placement(ctx, record) {}
};

struct PlacementTest : ::testing::Test {
  boost::asio::io_context io;
  core::SplitMixRng rng{7};
  WardenMetrics metrics;
  ReplicaGuard guard{metrics};
  Config config = config_of(kTwoReplicas);
  ModelRuntime model{config.models[0], 1, io.get_executor(), rng};
  Request request{context()};
  RequestRecord& record = request.record;
  Placement& placement = request.placement;

  PlacementContext context() { return {rng, guard, metrics, nullptr}; }

  // Both replicas scraped once, each with a GPU cache of 40,000 tokens (2,500 blocks of 16).
  void scrape_both() {
    const std::string caches = "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"2500\"} 1.0\n";
    for (const UpstreamUrl& url : config.models[0].urls) {
      model.apply_scrape(url, *scrape_for_model(caches, "served"));
    }
  }

  void set_admission(bool on, std::uint32_t max_queue = 64) {
    core::RoutingConfig routing = model.routing();
    routing.admission.enabled = on;
    routing.admission.max_queue = max_queue;
    routing.admission.max_wait = 2500ms;
    ASSERT_TRUE(model.set_routing(routing));
  }

  void prepare(const Ask& ask, bool counting_only = false, Request* r = nullptr) {
    r = r ? r : &request;
    r->body = R"({"model":"m","messages":[{"role":"user","content":")" +
              std::string(ask.prompt_tokens * 4, 'x') + R"("}]})";
    std::vector<protocol::HeaderField> headers;
    if (!ask.session.empty()) {
      headers.push_back({"X-Warden-Session", ask.session});
    }
    if (!ask.pin.empty()) {
      headers.push_back({"X-Warden-Replica", ask.pin});
    }
    auto info =
        protocol::inspect_request(protocol::ApiKind::openai_chat, protocol::HeaderLookup{headers}, r->body);
    ASSERT_TRUE(info);
    r->record.model = "m";
    r->placement.prepare(model, protocol::ApiKind::openai_chat, *info, r->body, counting_only);
  }

  // place() run on the test's executor as far as it goes: nullopt while a held request waits in the queue.
  std::optional<bool> place(int attempt, PlacementTry& at, Request* r = nullptr) {
    r = r ? r : &request;
    r->placed.reset();
    boost::asio::co_spawn(
        io,
        [r, attempt, &at]() -> net::asio::awaitable<void> {
          r->placed = co_await r->placement.place(attempt, at);
        },
        boost::asio::detached);
    run();
    return r->placed;
  }

  void run() {
    io.restart();
    io.poll();
  }

  std::uint32_t in_flight(int replica) {
    return model.view(core::Time{}).counters.at(static_cast<std::size_t>(replica)).in_flight;
  }
};

}  // namespace

TEST_F(PlacementTest, ARequestIsCountedOnItsReplicaUntilItEnds) {
  prepare({.session = "s1"});
  PlacementTry at;
  ASSERT_EQ(place(0, at), true);
  ASSERT_TRUE(at.decision.ok());
  EXPECT_EQ(record.replica, static_cast<int>(*at.decision.replica));
  EXPECT_EQ(record.route, "new");
  EXPECT_EQ(record.thread, "main");
  EXPECT_EQ(in_flight(record.replica), 1u);
  placement.end();
  EXPECT_EQ(in_flight(record.replica), 0u);
  placement.end();
  EXPECT_EQ(in_flight(record.replica), 0u) << "released once, however often the request ends";
}

TEST_F(PlacementTest, ARequestThatGeneratesNothingIsNeverCounted) {
  prepare({.session = "s1"}, true);
  PlacementTry at;
  ASSERT_EQ(place(0, at), true);
  EXPECT_EQ(in_flight(record.replica), 0u);
  EXPECT_EQ(model.view(core::Time{}).totals.routed(), 0u);
}

TEST_F(PlacementTest, ARetryNeverGoesBackToTheReplicaThatFailedAndCountsOnce) {
  prepare({.session = "s1"});
  PlacementTry at;
  ASSERT_EQ(place(0, at), true);
  const int first = record.replica;
  placement.failed(0, at, config.models[0].replica_url(first),
                   {.why = "closed", .may_retry = true, .reason = core::OutlierReason::gateway_error});
  ASSERT_TRUE(at.retry);
  EXPECT_EQ(in_flight(first), 0u) << "abandoned: routed again";
  ASSERT_EQ(place(1, at), true);
  EXPECT_NE(record.replica, first);
  EXPECT_EQ(record.route, "failover");
  EXPECT_EQ(in_flight(record.replica), 1u);
  EXPECT_EQ(model.view(core::Time{}).counters.at(static_cast<std::size_t>(first)).routed(), 0u)
      << "the abandoned attempt is not counted";
}

TEST_F(PlacementTest, APinnedRequestIsNotRetriedElsewhere) {
  prepare({.session = "s1", .pin = "1"});
  PlacementTry at;
  ASSERT_EQ(place(0, at), true);
  EXPECT_EQ(record.replica, 1);
  EXPECT_EQ(record.route, "pinned");
  placement.failed(0, at, config.models[0].replica_url(1), {.why = "closed", .may_retry = true});
  EXPECT_FALSE(at.retry);
  EXPECT_EQ(in_flight(1), 0u) << "released";
}

TEST_F(PlacementTest, AnUnreachableReplicaIsMarkedDownAndNoneLeftIsA503) {
  prepare({.session = "s1"});
  PlacementTry at;
  for (int tried = 0; tried < 2; ++tried) {
    ASSERT_EQ(place(0, at), true);
    placement.failed(0, at, config.models[0].replica_url(record.replica),
                     {.why = "refused", .may_retry = true, .unreachable = true});
    EXPECT_FALSE(model.replica_set().replicas()[static_cast<std::size_t>(record.replica)].metrics.healthy);
    EXPECT_EQ(model.replica_set().replicas()[static_cast<std::size_t>(record.replica)].last_error, "refused");
  }
  EXPECT_EQ(place(0, at), false);
  EXPECT_FALSE(at.retry);
  EXPECT_EQ(at.failure.status, 503u);
  EXPECT_EQ(at.failure.code, "no_healthy_replica");
}

TEST_F(PlacementTest, AdmissionHoldsOnlyAFirstRoutingUntilItIsRoutedAgain) {
  scrape_both();
  set_admission(true);
  prepare({.session = "a", .prompt_tokens = 50'000});  // fits no 40,000-token cache
  PlacementTry retried;
  EXPECT_EQ(place(1, retried), true) << "a retry goes as if it had waited its bound";
  placement.end();

  Request held(context());
  prepare({.session = "b", .prompt_tokens = 50'000}, false, &held);
  PlacementTry at;
  EXPECT_EQ(place(0, at, &held), std::nullopt) << "held in the queue";
  EXPECT_EQ(model.queue().size(), 1u);
  EXPECT_EQ(held.record.route, "queued");
  set_admission(false);  // routes the held requests again
  run();
  EXPECT_EQ(held.placed, true);
  EXPECT_EQ(model.queue().size(), 0u);
  EXPECT_EQ(held.record.route, "new");
  ASSERT_TRUE(held.record.queued_s.has_value());
  EXPECT_EQ(in_flight(held.record.replica), 1u);
  held.placement.end();
}

TEST_F(PlacementTest, AFullQueueRefusesWithRetryAfter) {
  scrape_both();
  set_admission(true, 0);
  prepare({.session = "a", .prompt_tokens = 50'000});
  PlacementTry at;
  EXPECT_EQ(place(0, at), false);
  EXPECT_EQ(at.failure.status, 503u);
  EXPECT_EQ(at.failure.code, "queue_full");
  EXPECT_EQ(at.failure.retry_after_s, 3) << "2.5 s, rounded up";
  EXPECT_FALSE(at.retry);
}

TEST_F(PlacementTest, APinOutOfRangeIsTheClientsError) {
  prepare({.session = "s1", .pin = "1"});
  ModelConfig smaller = config.models[0];
  smaller.urls.resize(1);
  model.relay(smaller);
  PlacementTry at;
  EXPECT_EQ(place(0, at), false);
  EXPECT_EQ(at.failure.status, 400u);
  EXPECT_EQ(at.failure.code, "invalid_pin");
}

// A reload removed the replica of a request in flight: that request no longer touches the replica that
// took the index, and a request on a replica that remains follows it to its new index.
TEST_F(PlacementTest, AReplicaRemovedByAReloadIsLeftAloneAndOneMovedIsFollowed) {
  prepare({.session = "a", .pin = "0"});
  PlacementTry at;
  ASSERT_EQ(place(0, at), true);
  Request moved(context());
  prepare({.session = "b", .pin = "1"}, false, &moved);
  PlacementTry at_moved;
  ASSERT_EQ(place(0, at_moved, &moved), true);
  ModelConfig smaller = config.models[0];
  smaller.urls.erase(smaller.urls.begin());  // replica 1 is replica 0 now
  model.relay(smaller);
  EXPECT_EQ(in_flight(0), 1u);
  EXPECT_FALSE(placement.follow_layout());
  placement.end();
  EXPECT_EQ(in_flight(0), 1u) << "the removed replica's request released nothing of the one now at 0";
  EXPECT_TRUE(moved.placement.follow_layout());
  EXPECT_EQ(moved.record.replica, 0);
  moved.placement.end();
  EXPECT_EQ(in_flight(0), 0u);
}

TEST_F(PlacementTest, TheRoutingFactsAreTheRequestsInTheCoresTerms) {
  prepare({.session = "s1", .prompt_tokens = 1'000, .pin = "0"});
  const core::RequestFacts& f = placement.facts();
  ASSERT_TRUE(f.session);
  EXPECT_NE(f.session->hash, 0u);
  EXPECT_EQ(f.thread.session, f.session->hash) << "the main thread's key is its session's";
  EXPECT_EQ(f.pin, core::ReplicaIndex{0});
  EXPECT_NEAR(f.prompt_tokens, 1'000, 20);
  EXPECT_FALSE(f.offers_tools);
  EXPECT_FALSE(f.task_start);
}
