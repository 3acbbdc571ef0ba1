// A reload that changes what is served (docs/config.md, "Reloading"): replica URLs added or removed (each
// replica found again by its URL, its conversations kept; a removed one's fail over), models added or
// removed. Each while a stream is in flight, which must end whole.
#include <signal.h>

#include "reload_support.hpp"

using namespace gateway_test;
using namespace reload_test;
using namespace std::chrono_literals;

namespace {

std::string url_of(int port) {
  return "http://127.0.0.1:" + std::to_string(port);
}

// A model served by one engine per URL.
std::string urls_model(const std::vector<int>& ports, const std::string& name = "m") {
  std::string urls;
  for (int p : ports) {
    urls += (urls.empty() ? "" : ", ") + url_of(p);
  }
  return "  - name: " + name + "\n    served_model_name: " + kServed +
         "\n    max_num_seqs: 32\n    routing: { affinity: true, spill_threshold: 8 }\n    replicas: { urls: "
         "[" +
         urls + "] }\n";
}

// The index the model's card gives the replica at `port` (-1: none).
int index_of(int warden_port, int port, const std::string& model = "m") {
  const auto c = card(warden_port, model);
  for (const auto& row : c.at("routing").at("replicas").as_array()) {
    if (row.at("url").as_string() == url_of(port)) {
      return static_cast<int>(num(row.at("index")));
    }
  }
  return -1;
}

std::int64_t in_flight_at(int warden_port, int replica) {
  return num(replica_of(card(warden_port), replica).at("in_flight"));
}

bool healthy_at(int warden_port, int port) {
  const int i = index_of(warden_port, port);
  return i >= 0 && replica_of(card(warden_port), i).at("healthy").as_bool();
}

struct Turn {
  unsigned status = 0;
  int replica = -1;
  std::string route;
};

Turn turn(int warden_port, const std::string& session, const std::string& model = "m") {
  Client c(warden_port);
  auto r = c.post("/v1/chat/completions", chat_body("turn of " + session, 2, false, model),
                  {{"X-Warden-Session", session}});
  const std::string replica = r.header("x-warden-replica");
  return {r.status, replica.empty() ? -1 : std::stoi(replica), r.header("x-warden-route")};
}

// A conversation placed on replica `replica` (new sessions tried until one lands there, bounded).
std::string conversation_on(int warden_port, int replica, const std::string& prefix) {
  for (int i = 0; i < 40; ++i) {
    const std::string session = prefix + std::to_string(i);
    if (turn(warden_port, session).replica == replica) {
      return session;
    }
  }
  ADD_FAILURE() << "no conversation placed on replica " << replica;
  return prefix;
}

}  // namespace

// A URL added in front of the list: the replicas that remain are found by URL at their new index with
// their conversations, new conversations reach the new engine, the stream in flight ends whole.
TEST(GatewayReloadReplicas, SighupAddsAReplicaUrl) {
  auto a = start_sim(1, 0.005);
  auto b = start_sim(1, 0.005);
  auto added = start_sim(1, 0.005);
  Warden w(urls_model({a->port(), b->port()}));
  ASSERT_TRUE(
      wait_until([&] { return healthy_at(w.port, a->port()) && healthy_at(w.port, b->port()); }, 10s));
  const std::string kept = conversation_on(w.port, 1, "kept-");  // on b
  Stream stream(w.port, {{"X-Warden-Replica", "0"}});            // on a
  ASSERT_TRUE(wait_until([&] { return sim_running(a->port(), 0) >= 1; }, 20s));
  rewrite(w, urls_model({added->port(), a->port(), b->port()}), "");
  w.proc->signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return healthy_at(w.port, added->port()); }, 10s));
  ASSERT_EQ(index_of(w.port, b->port()), 2);
  const Turn again = turn(w.port, kept);
  EXPECT_EQ(again.status, 200u);
  EXPECT_EQ(again.replica, 2) << "the conversation stays on its engine, now replica 2";
  EXPECT_EQ(again.route, "sticky");
  // New conversations are placed on the least loaded replicas: the new engine, idle, gets some.
  bool reached = false;
  for (int i = 0; i < 20 && !reached; ++i) {
    reached = turn(w.port, "new-" + std::to_string(i)).replica == 0;
  }
  EXPECT_TRUE(reached);
  EXPECT_TRUE(stream.whole());
  // The stream's in-flight slot is given back where a is now, not at its old index.
  EXPECT_TRUE(wait_until([&] { return in_flight_at(w.port, 1) == 0; }, 5s));
  EXPECT_EQ(in_flight_at(w.port, 0), 0);
}

// The first URL removed while a stream runs on it: the stream ends whole; the conversation homed there
// fails over; the one on the other engine stays there (now replica 0).
TEST(GatewayReloadReplicas, SighupRemovesAReplicaUrl) {
  auto a = start_sim(1, 0.005);
  auto b = start_sim(1, 0.005);
  Warden w(urls_model({a->port(), b->port()}));
  ASSERT_TRUE(
      wait_until([&] { return healthy_at(w.port, a->port()) && healthy_at(w.port, b->port()); }, 10s));
  const std::string on_a = conversation_on(w.port, 0, "a-");
  const std::string on_b = conversation_on(w.port, 1, "b-");
  Stream stream(w.port, {{"X-Warden-Replica", "0"}});
  HeldStream held(w.port, chat_body("held on b", 800), {{"X-Warden-Replica", "1"}});
  ASSERT_TRUE(held.wait_started());
  ASSERT_TRUE(wait_until([&] { return sim_running(a->port(), 0) >= 1; }, 20s));
  rewrite(w, urls_model({b->port()}), "");
  w.proc->signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return index_of(w.port, a->port()) < 0; }, 10s));
  const Turn stays = turn(w.port, on_b);
  EXPECT_EQ(stays.replica, 0);
  EXPECT_EQ(stays.route, "sticky");
  const Turn moved = turn(w.port, on_a);
  EXPECT_EQ(moved.status, 200u);
  EXPECT_EQ(moved.replica, 0);
  EXPECT_EQ(moved.route, "failover");
  EXPECT_TRUE(stream.whole());
  EXPECT_EQ(turn(w.port, on_b).status, 200u);  // a later request: the stream's end has been handled
  EXPECT_EQ(in_flight_at(w.port, 0), 1) << "the end of the stream on a gave back none of b's slots";
  held.release();
}

// A model added is served and scraped at once, while a stream of the other model goes on.
TEST(GatewayReloadModels, SighupAddsAModel) {
  auto sim = start_sim(1, 0.005);
  auto other = start_sim(1, 0.005);
  Warden w(dp_model(sim->port(), 1));
  Stream stream(w.port, {});
  ASSERT_TRUE(wait_until([&] { return in_flight(sim->port(), 1); }, 20s));
  Client c(w.port);
  EXPECT_EQ(c.post("/v1/chat/completions", chat_body("hi", 2, false, "n")).status, 404u);
  rewrite(w, dp_model(sim->port(), 1) + dp_model(other->port(), 1, "{ affinity: true }", "n"), "");
  w.proc->signal(SIGHUP);
  // Healthy once scraped (a model added starts unhealthy until its engine's first /metrics).
  ASSERT_TRUE(wait_until(
      [&] {
        auto r = c.get("/api/models/n");
        return r.status == 200u &&
               boost::json::parse(r.body).at("routing").at("replicas").at(0).at("healthy").as_bool();
      },
      10s));
  auto r = c.post("/v1/chat/completions", chat_body("hi", 2, false, "n"));
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_TRUE(stream.whole());
}

// A model removed answers 404 in each client's format, while its stream in flight ends whole.
TEST(GatewayReloadModels, SighupRemovesAModel) {
  auto sim = start_sim(1, 0.005);
  Warden w(dp_model(sim->port(), 1) + dp_model(sim->port(), 1, "{ affinity: true }", "n"));
  Stream stream(w.port, {}, 150, "n");
  ASSERT_TRUE(wait_until([&] { return in_flight(sim->port(), 1); }, 20s));
  rewrite(w, dp_model(sim->port(), 1), "");
  w.proc->signal(SIGHUP);
  Client c(w.port);
  ASSERT_TRUE(wait_until(
      [&] { return c.post("/v1/chat/completions", chat_body("hi", 2, false, "n")).status == 404u; }, 10s));
  expect_openai_error(c.post("/v1/chat/completions", chat_body("hi", 2, false, "n")), 404);
  const std::string messages = R"({"model":"n","max_tokens":2,"messages":[{"role":"user","content":"hi"}]})";
  expect_anthropic_error(c.post("/v1/messages", messages), 404);
  EXPECT_EQ(c.post("/v1/chat/completions", chat_body("hi", 2, false, "m")).status, 200u);
  EXPECT_TRUE(stream.whole());
}
