// Two wardens in front of one DP sim, sharing conversation homes and load through a real redis-server
// started on a free port (real processes): turns alternating between the wardens stay on one replica,
// new conversations spread over the replicas as one warden would spread them (arriving at once too: they
// take turns through the placement lock), and Redis going away and coming back, or a lock left behind,
// never fails a request and ends with both wardens agreeing again.
#include <gtest/gtest.h>
#include <hiredis.h>
#include <signal.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gateway/shared/shared_keys.hpp"
#include "gateway_support.hpp"

using namespace gateway_test;

namespace {

// A redis-server of its own, nothing kept on disk.
struct Redis {
  int port = test_support::free_port();
  std::unique_ptr<ChildProcess> proc;

  Redis() { start(); }
  void start() {
    proc = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/usr/bin/redis-server", "--port", std::to_string(port), "--bind",
                                 "127.0.0.1", "--save", "", "--appendonly", "no"});
    const bool listening = wait_until([this] {
      try {
        ::close(test_support::raw_connect(port));
        return true;
      } catch (const std::exception&) {
        return false;
      }
    });
    if (!listening) {
      throw std::runtime_error("redis-server did not listen: " + proc->stdout_text());
    }
  }
  void kill() {
    proc->signal(SIGKILL);
    proc->wait_exit(std::chrono::seconds(5));
  }
};

std::string shared_state(const Redis& redis, const std::string& more = "") {
  return "state: { redis: \"redis://127.0.0.1:" + std::to_string(redis.port) + "/0\", prefix: \"t:\"" +
         (more.empty() ? "" : ", " + more) + " }\n";
}

// The test's own connection to the Redis, for what a warden would write (or a dead one left behind).
struct RedisClient {
  redisContext* ctx;
  explicit RedisClient(int port) : ctx(redisConnect("127.0.0.1", port)) {
    if (ctx == nullptr || ctx->err != 0) {
      throw std::runtime_error("cannot reach redis-server");
    }
  }
  ~RedisClient() { redisFree(ctx); }
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // The reply as text: a string, "nil", an integer, or [elements] (a nested load hash as its size).
  std::string run(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(ctx, static_cast<int>(argv.size()), argv.data(), lengths.data()));
    if (r == nullptr) {
      throw std::runtime_error("redis-server did not answer");
    }
    const std::string out = text(r, true);
    freeReplyObject(r);
    return out;
  }
  static std::string text(const redisReply* r, bool top) {
    switch (r->type) {
      case REDIS_REPLY_NIL:
        return "nil";
      case REDIS_REPLY_INTEGER:
        return std::to_string(r->integer);
      case REDIS_REPLY_ARRAY: {
        if (!top) {
          return "#" + std::to_string(r->elements);
        }
        std::string out = "[";
        for (std::size_t i = 0; i < r->elements; ++i) {
          out += (i > 0 ? " " : "") + text(r->element[i], false);
        }
        return out + "]";
      }
      default:
        return std::string(r->str, r->len);
    }
  }
};

// One value of the warden's /metrics (-1 if absent); `name` may carry labels.
double metric(int port, const std::string& name) {
  Client c(port);
  const std::string text = c.get("/metrics", {{"Authorization", "Bearer secret"}}).body;
  std::smatch m;
  const std::string quoted = std::regex_replace(name, std::regex(R"([{}])"), R"(\$&)");
  if (std::regex_search(text, m, std::regex("\n" + quoted + " ([0-9.e+-]+)\n"))) {
    return std::stod(m[1].str());
  }
  return -1;
}

// A turn of a conversation: the same system prompt and every earlier turn, so the prefix grows.
std::string turn_body(const std::string& session, int turns) {
  boost::json::array messages{boost::json::object{
      {"role", "system"}, {"content", "You are a careful coding agent. " + session + std::string(400, 'x')}}};
  for (int t = 0; t < turns; ++t) {
    messages.push_back(boost::json::object{{"role", "user"}, {"content", "step " + std::to_string(t)}});
    if (t + 1 < turns) {
      messages.push_back(
          boost::json::object{{"role", "assistant"}, {"content", "done " + std::to_string(t)}});
    }
  }
  return boost::json::serialize(
      boost::json::object{{"model", "m"}, {"max_tokens", 4}, {"stream", false}, {"messages", messages}});
}

struct Turn {
  unsigned status = 0;
  std::string replica;
  std::string route;
  std::int64_t cached = 0;
};

Turn send_turn(int port, const std::string& session, int turns) {
  Client c(port);
  auto r = c.post("/v1/chat/completions", turn_body(session, turns), {{"X-Warden-Session", session}});
  Turn t{r.status, r.header("x-warden-replica"), r.header("x-warden-route")};
  if (r.status == 200) {
    const boost::json::value body = json_of(r);
    const auto& usage = body.at("usage").as_object();
    if (const auto* details = usage.if_contains("prompt_tokens_details"); details && details->is_object()) {
      t.cached = num(details->as_object().at("cached_tokens"));
    }
  }
  return t;
}

struct TwoWardens {
  Redis redis;
  std::unique_ptr<ChildProcess> sim = start_sim(4);
  Warden a;
  Warden b;

  explicit TwoWardens(const std::string& state = "")
      : a{dp_model(sim->port(), 4), shared_state(redis, state)},
        b{dp_model(sim->port(), 4), shared_state(redis, state)} {
    // Both have reached Redis and published what they hold (nothing yet) before the test starts.
    EXPECT_TRUE(wait_until([&] { return resyncs(a.port) >= 1 && resyncs(b.port) >= 1; }));
  }
  static double resyncs(int port) { return metric(port, "lm_warden_shared_state_resyncs_total"); }
  int port(int i) const { return i % 2 == 0 ? a.port : b.port; }
};

}  // namespace

TEST(GatewaySharedState, TurnsAlternatingBetweenWardensStayOnOneReplicaAndHitItsCache) {
  TwoWardens w;
  const Turn first = send_turn(w.a.port, "alternating", 1);
  ASSERT_EQ(first.status, 200u);
  EXPECT_EQ(first.route, "new");
  for (int turn = 2; turn <= 6; ++turn) {
    const Turn t = send_turn(w.port(turn - 1), "alternating", turn);
    ASSERT_EQ(t.status, 200u);
    EXPECT_EQ(t.replica, first.replica) << "turn " << turn;
    EXPECT_EQ(t.route, "sticky") << "turn " << turn;
    EXPECT_GT(t.cached, 0) << "turn " << turn;
  }
  // Each warden asked Redis once: at the conversation's first request there.
  const auto card_a = card(w.a.port);
  EXPECT_TRUE(card_a.at("shared_state").at("up").as_bool());
  EXPECT_EQ(num(card_a.at("routing").at("live_sessions")), 1);
  EXPECT_EQ(num(card(w.b.port).at("routing").at("live_sessions")), 1);
}

// A conversation whose turns alternate between the wardens counts once in the load they share: at the
// warden that had its latest turn (each counting it as its own made every such conversation weigh double
// in placement, admission and rebalancing).
TEST(GatewaySharedState, AConversationAlternatingBetweenWardensCountsOnceInTheirLoads) {
  TwoWardens w;
  const Turn first = send_turn(w.a.port, "counted-once", 1);
  ASSERT_EQ(first.status, 200u);
  const std::size_t home = std::stoul(first.replica);
  const auto counts = [&](int port) {
    const auto row = card(port).at("routing").at("replicas").as_array().at(home);
    return std::pair{num(row.at("active_conversations")), num(row.at("peer_active_conversations"))};
  };
  for (int turn = 2; turn <= 3; ++turn) {
    const int latest = w.port(turn - 1);
    const int other = w.port(turn);
    ASSERT_EQ(send_turn(latest, "counted-once", turn).replica, first.replica);
    EXPECT_TRUE(wait_until([&] {
      return counts(latest) == std::pair<std::int64_t, std::int64_t>{1, 0} &&
             counts(other) == std::pair<std::int64_t, std::int64_t>{0, 1};
    })) << "turn "
        << turn << ": " << counts(latest).first << "+" << counts(latest).second << " at the latest, "
        << counts(other).first << "+" << counts(other).second << " at the other";
  }
}

// The keep-alive script: the warden of a conversation's latest turn owns it, and the one it took it from
// finds the conversation (with its home's computed mark) on its elsewhere list.
TEST(GatewaySharedState, TheKeepAliveTellsTheWardenOfTheEarlierTurnThatAnotherHadTheLatest) {
  Redis redis;
  RedisClient c(redis.port);
  using namespace warden::gateway;
  const auto keep_alive = [&](const std::string& warden, std::uint32_t home, std::uint64_t mark) {
    return c.run(keep_alive_command("t:", "m", {0xabcULL, home, mark}, 60000, warden, 60000));
  };
  const auto list = [&](const std::string& warden) {
    return c.run({"LRANGE", elsewhere_key("t:", "m", warden), "0", "-1"});
  };
  EXPECT_EQ(keep_alive("a", 2, 100), "nil");  // no home yet: written
  EXPECT_EQ(c.run({"GET", home_key("t:", "m", 0xabcULL)}), "2");
  EXPECT_EQ(c.run({"GET", turn_key("t:", "m", 0xabcULL)}), "a");
  EXPECT_EQ(keep_alive("a", 2, 150), "2");
  EXPECT_EQ(list("a"), "[]") << "its own turn again";
  EXPECT_EQ(keep_alive("b", 2, 200), "2");
  EXPECT_EQ(list("a"), "[0000000000000abc 2 200]");
  EXPECT_GT(std::stoll(c.run({"PTTL", elsewhere_key("t:", "m", "a")})), 0) << "a dead warden's list expires";
  EXPECT_EQ(list("b"), "[]");
  EXPECT_EQ(keep_alive("a", 3, warden::core::SessionEntry::unknown), "2") << "Redis holds another home";
  EXPECT_EQ(list("b"), "[]") << "that home is adopted, not counted elsewhere";
  EXPECT_EQ(keep_alive("b", 2, warden::core::SessionEntry::unknown), "2");
  EXPECT_EQ(list("a"), "[0000000000000abc 2 200 0000000000000abc 2 -]");
}

TEST(GatewaySharedState, EightNewConversationsFourPerWardenLandTwoPerReplica) {
  TwoWardens w;
  std::map<std::string, int> per_replica;
  for (int i = 0; i < 8; ++i) {
    const Turn t = send_turn(w.port(i), "spread-" + std::to_string(i), 1);
    ASSERT_EQ(t.status, 200u);
    EXPECT_EQ(t.route, "new");
    ++per_replica[t.replica];
  }
  EXPECT_EQ(per_replica, (std::map<std::string, int>{{"0", 2}, {"1", 2}, {"2", 2}, {"3", 2}}));
}

// The other warden's card shows a conversation it never saw on the replica that holds it (the console's
// "N at other wardens"), from the load the first warden publishes.
TEST(GatewaySharedState, TheOtherWardensCardCountsAConversationItNeverSaw) {
  TwoWardens w;
  const Turn t = send_turn(w.a.port, "only-at-a", 1);
  ASSERT_EQ(t.status, 200u);
  const std::size_t replica = std::stoul(t.replica);
  const auto peer_conversations = [&](int port, std::size_t i) {
    return num(card(port).at("routing").at("replicas").as_array().at(i).at("peer_active_conversations"));
  };
  EXPECT_TRUE(wait_until([&] { return peer_conversations(w.b.port, replica) == 1; }));
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(peer_conversations(w.a.port, i), 0) << "a warden never counts its own load as a peer's";
    if (i != replica) {
      EXPECT_EQ(peer_conversations(w.b.port, i), 0) << "replica " << i;
    }
  }
  EXPECT_EQ(num(card(w.b.port).at("routing").at("live_sessions")), 0);
}

// A burst: new conversations arriving together at both wardens take turns through the placement lock, so
// each placement reads every earlier claim and they land as one warden would place them. The lookup bound
// is raised so that a slow test machine cannot make a placement give up its wait for the lock.
TEST(GatewaySharedState, EightNewConversationsSentAtOnceFourPerWardenLandTwoPerReplica) {
  TwoWardens w("lookup_timeout: 200ms");
  std::vector<Turn> turns(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { turns[i] = send_turn(w.port(i), "burst-" + std::to_string(i), 1); });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  std::map<std::string, int> per_replica;
  for (const Turn& t : turns) {
    ASSERT_EQ(t.status, 200u);
    EXPECT_EQ(t.route, "new");
    ++per_replica[t.replica];
  }
  EXPECT_EQ(per_replica, (std::map<std::string, int>{{"0", 2}, {"1", 2}, {"2", 2}, {"3", 2}}));
  for (int port : {w.a.port, w.b.port}) {
    EXPECT_EQ(metric(port, R"(lm_warden_shared_state_requests_total{op="lookup",result="locked"})"), -1);
  }
}

// A warden that stopped while it held the placement lock: the others wait for it at most lookup_timeout,
// then place without it; nothing fails.
TEST(GatewaySharedState, APlacementLockLeftByADeadWardenDelaysAPlacementByTheLookupBoundAtMost) {
  // A 20 ms bound, not the default 5 ms: under a loaded test run the first round trip to Redis could take
  // longer than 5 ms, and the lookup then ends as a timeout before it ever saw the lock.
  TwoWardens w("lookup_timeout: 20ms");
  RedisClient c(w.redis.port);
  using namespace warden::gateway;
  ASSERT_EQ(c.run({"SET", placement_lock_key("t:", "m"), placement_token("gone", 7), "PX", "60000"}), "OK");
  for (int i = 0; i < 4; ++i) {
    const auto started = std::chrono::steady_clock::now();
    const Turn t = send_turn(w.port(i), "after-a-dead-one-" + std::to_string(i), 1);
    const auto took = std::chrono::steady_clock::now() - started;
    EXPECT_EQ(t.status, 200u);
    EXPECT_EQ(t.route, "new");
    EXPECT_LT(took, std::chrono::milliseconds(250)) << i;
  }
  for (int port : {w.a.port, w.b.port}) {
    const std::string lookups = R"(lm_warden_shared_state_lookup_seconds_bucket{op="lookup",le=")";
    EXPECT_EQ(metric(port, R"(lm_warden_shared_state_requests_total{op="lookup",result="locked"})"), 2);
    // Each waited for the lock (more than half the 20 ms bound), and not much beyond the bound.
    EXPECT_EQ(metric(port, lookups + "0.01\"}"), 0);
    EXPECT_EQ(metric(port, lookups + "0.05\"}"), 2);
  }
  EXPECT_EQ(c.run({"GET", placement_lock_key("t:", "m")}), placement_token("gone", 7));
}

// The placement lock's scripts as Redis runs them: wardens placing at once take turns, a home already
// there needs no lock, and only the holder's own token gives the lock back.
TEST(GatewaySharedState, ThePlacementLockLetsWardensTakeTurns) {
  Redis redis;
  RedisClient c(redis.port);
  using namespace warden::gateway;
  const auto lock = [&](const std::string& warden, int seq, std::uint64_t session) {
    return c.run(placement_lock_command("t:", "m", session, placement_token(warden, seq), 10000, warden));
  };
  const auto release = [&](const std::string& warden, int seq) {
    return c.run(placement_release_command("t:", "m", placement_token(warden, seq), warden));
  };
  const auto holder = [&] { return c.run({"GET", placement_lock_key("t:", "m")}); };
  const auto next = [&] { return c.run({"GET", placement_next_key("t:", "m")}); };
  c.run({"HSET", load_key("t:", "m"), "a", "1 0,1,10"});
  EXPECT_EQ(lock("a", 1, 1), "[nil 1 #2]");  // free: taken, and the load hash (one field) read with it
  EXPECT_GT(std::stoll(c.run({"PTTL", placement_lock_key("t:", "m")})), 0);
  EXPECT_EQ(lock("b", 1, 2), "[nil 0 #2]");  // a holds it: b is next
  EXPECT_EQ(next(), "b");
  EXPECT_EQ(lock("a", 2, 3), "[nil 0 #2]");  // its own lock, but b waits first
  release("a", 1);
  EXPECT_EQ(holder(), "nil");
  EXPECT_EQ(lock("b", 2, 2), "[nil 1 #2]");  // b's turn, and nobody waits now
  EXPECT_EQ(next(), "nil");
  release("a", 2);  // an old token gives nothing back
  EXPECT_EQ(holder(), placement_token("b", 2));
  EXPECT_EQ(lock("a", 3, 3), "[nil 0 #2]");
  EXPECT_EQ(next(), "a");
  release("b", 2);
  EXPECT_EQ(lock("b", 3, 4), "[nil 0 #2]");  // free, but a is next
  EXPECT_EQ(lock("a", 4, 3), "[nil 1 #2]");
  // Its own earlier placement's release still on its way: a takes the lock again, and that release
  // leaves the new one be.
  EXPECT_EQ(lock("a", 5, 6), "[nil 1 #2]");
  release("a", 4);
  EXPECT_EQ(holder(), placement_token("a", 5));
  // A conversation placed already: its home, whoever holds the lock.
  c.run({"SET", home_key("t:", "m", 9), "2"});
  EXPECT_EQ(lock("b", 4, 9), "[2 0 #2]");
  release("a", 5);
  EXPECT_EQ(holder(), "nil");
}

TEST(GatewaySharedState, RedisDownFailsNoRequestAndBothWardensAgreeOnceItIsBack) {
  TwoWardens w;
  ASSERT_EQ(send_turn(w.a.port, "before", 1).status, 200u);
  w.redis.kill();
  // Every request is answered while Redis is gone; each warden routes on its own.
  for (int i = 0; i < 6; ++i) {
    const std::string session = "during-" + std::to_string(i);
    EXPECT_EQ(send_turn(w.a.port, session, 1).status, 200u);
    EXPECT_EQ(send_turn(w.b.port, session, 2).status, 200u);
    EXPECT_EQ(send_turn(w.port(i), "before", 2 + i).status, 200u);
  }
  EXPECT_TRUE(wait_until([&] {
    return metric(w.a.port, "lm_warden_shared_state_up") == 0 &&
           metric(w.b.port, "lm_warden_shared_state_up") == 0;
  }));
  EXPECT_GT(metric(w.a.port, "lm_warden_shared_state_errors_total"), 0);
  EXPECT_FALSE(card(w.b.port).at("shared_state").at("up").as_bool());

  // Back (empty): both publish their homes again, set if absent, and adopt the one already there.
  w.redis.start();
  ASSERT_TRUE(
      wait_until([&] { return TwoWardens::resyncs(w.a.port) >= 2 && TwoWardens::resyncs(w.b.port) >= 2; },
                 std::chrono::seconds(15)));
  for (int i = 0; i < 6; ++i) {
    const std::string session = "during-" + std::to_string(i);
    const Turn at_a = send_turn(w.a.port, session, 3);
    const Turn at_b = send_turn(w.b.port, session, 4);
    ASSERT_EQ(at_a.status, 200u);
    ASSERT_EQ(at_b.status, 200u);
    EXPECT_EQ(at_a.replica, at_b.replica) << session;
  }
  const Turn fresh = send_turn(w.b.port, "after", 1);
  EXPECT_EQ(send_turn(w.a.port, "after", 2).replica, fresh.replica);
  EXPECT_EQ(metric(w.a.port, "lm_warden_shared_state_up"), 1);
}

TEST(GatewaySharedState, ASlowRedisDelaysNoRequestBeyondTheLookupBound) {
  TwoWardens w;
  w.redis.proc->signal(SIGSTOP);  // accepts connections, answers nothing
  for (int i = 0; i < 6; ++i) {
    const auto started = std::chrono::steady_clock::now();
    const Turn t = send_turn(w.port(i), "stalled-" + std::to_string(i), 1);
    const auto took = std::chrono::steady_clock::now() - started;
    EXPECT_EQ(t.status, 200u);
    // The bound is 5 ms a step (lookup, then the claim); the rest is the sim's answer and the test's
    // own connection, far below this.
    EXPECT_LT(took, std::chrono::milliseconds(250)) << i;
  }
  w.redis.proc->signal(SIGCONT);
  EXPECT_GT(metric(w.a.port, R"(lm_warden_shared_state_requests_total{op="lookup",result="timeout"})"), 0);
}

TEST(GatewaySharedState, ARestartedWardenPublishesTheHomesItKeptToAnEmptyRedis) {
  TwoWardens w;
  std::map<std::string, std::string> homes;
  for (int i = 0; i < 4; ++i) {
    const std::string session = "kept-" + std::to_string(i);
    const Turn t = send_turn(w.a.port, session, 1);
    ASSERT_EQ(t.status, 200u);
    homes[session] = t.replica;
  }
  ASSERT_EQ(w.a.proc->stop(), 0);  // its homes are in its state_dir
  w.redis.kill();
  w.redis.start();  // empty: nothing kept on disk
  w.a.start(dp_model(w.sim->port(), 4), shared_state(w.redis));
  ASSERT_TRUE(
      wait_until([&] { return TwoWardens::resyncs(w.a.port) >= 1 && TwoWardens::resyncs(w.b.port) >= 2; },
                 std::chrono::seconds(15)));
  for (const auto& [session, replica] : homes) {
    const Turn t = send_turn(w.b.port, session, 2);  // the other warden never saw these
    ASSERT_EQ(t.status, 200u);
    EXPECT_EQ(t.replica, replica) << session;
    EXPECT_EQ(t.route, "sticky") << session;
  }
}

// A warden that moved a conversation (rebalance, failover) wrote its new home; a warden that knows the old
// one follows it once it keeps the conversation alive in Redis (its next flush after a turn there).
TEST(GatewaySharedState, AHomeAnotherWardenMovedIsFollowedAfterTheNextKeepAlive) {
  TwoWardens w;
  const Turn first = send_turn(w.a.port, "moved", 1);
  ASSERT_EQ(first.status, 200u);
  ASSERT_EQ(send_turn(w.b.port, "moved", 2).replica, first.replica);  // both know its home
  RedisClient c(w.redis.port);
  std::string key = c.run({"KEYS", "t:home:m:*"});
  ASSERT_GT(key.size(), 2u) << key;
  key = key.substr(1, key.size() - 2);
  const std::string other = std::to_string((std::stoi(first.replica) + 1) % 4);
  ASSERT_EQ(c.run({"SET", key, other, "PX", "600000"}), "OK");  // what a warden moving it writes
  int turn = 3;
  for (int port : {w.a.port, w.b.port}) {
    EXPECT_TRUE(wait_until([&] { return send_turn(port, "moved", turn++).replica == other; })) << port;
    EXPECT_EQ(send_turn(port, "moved", turn++).route, "sticky");
  }
  EXPECT_EQ(c.run({"GET", key}), other);
}

TEST(GatewaySharedState, TwoWardensFailingOverOneConversationAgreeOnItsNewHome) {
  Redis redis;
  std::vector<std::unique_ptr<ChildProcess>> sims;
  std::string models =
      "  - name: m\n    served_model_name: " + kServed + "\n    max_num_seqs: 32\n    replicas:\n";
  models += "      urls: [";
  for (int i = 0; i < 3; ++i) {
    sims.push_back(start_sim(1));
    models += (i > 0 ? ", " : "") + std::string("http://127.0.0.1:") + std::to_string(sims.back()->port());
  }
  models += "]\n";
  Warden a{models, shared_state(redis)};
  Warden b{models, shared_state(redis)};
  ASSERT_TRUE(
      wait_until([&] { return TwoWardens::resyncs(a.port) >= 1 && TwoWardens::resyncs(b.port) >= 1; }));
  const Turn first = send_turn(a.port, "moving", 1);
  ASSERT_EQ(first.status, 200u);
  ASSERT_EQ(send_turn(b.port, "moving", 2).replica, first.replica);  // both know its home now
  sims[static_cast<std::size_t>(std::stoi(first.replica))]->signal(SIGKILL);
  const auto down = [&](int port) {
    return !replica_of(card(port), std::stoi(first.replica)).at("healthy").as_bool();
  };
  ASSERT_TRUE(wait_until([&] { return down(a.port) && down(b.port); }));
  const Turn moved = send_turn(a.port, "moving", 3);
  ASSERT_EQ(moved.status, 200u);
  EXPECT_EQ(moved.route, "failover");
  // The first warden writes the new home after its answer (the flush is asynchronous); once it is in Redis,
  // the other warden's own placement would avoid the replica the first one just filled: it follows it.
  RedisClient c(redis.port);
  std::string key = c.run({"KEYS", "t:home:m:*"});
  ASSERT_GT(key.size(), 2u) << key;
  key = key.substr(1, key.size() - 2);
  ASSERT_TRUE(wait_until([&] { return c.run({"GET", key}) == moved.replica; }));
  const Turn followed = send_turn(b.port, "moving", 4);
  ASSERT_EQ(followed.status, 200u);
  EXPECT_EQ(followed.replica, moved.replica);
  EXPECT_EQ(send_turn(b.port, "moving", 5).route, "sticky");
}
