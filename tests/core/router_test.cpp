// The Router facade: lookup → decide → commit, counters, runtime config.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "core/made_router.hpp"
#include "core/router.hpp"

namespace warden::core {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

RequestFacts turn(std::uint64_t key, std::uint32_t tokens = 1000) {
  RequestFacts f;
  f.session = SessionKey{key};
  f.prompt_tokens = tokens;
  return f;
}

// Where a decision sent the request and why (not what it expects the replica to hold).
std::tuple<std::optional<ReplicaIndex>, Route, NoReplicaReason> where(const Decision& d) {
  return {d.replica, d.route, d.reason};
}

RouterConfig config_for(std::uint32_t max_num_seqs = 32, bool affinity = true) {
  RouterConfig c;
  c.routing.max_num_seqs = max_num_seqs;
  c.routing.affinity = affinity;
  return c;
}

class RouterTest : public ::testing::Test {
 protected:
  Decision route(RequestFacts f, std::int64_t t = 0) { return router_.route(f, metrics_, seconds(t), rng_); }
  void set_affinity(bool on) {
    RoutingConfig routing = router_.routing_config();
    routing.affinity = on;
    ASSERT_TRUE(router_.set_routing(routing));
  }
  std::vector<ReplicaMetrics> metrics_ = std::vector<ReplicaMetrics>(4);
  Router router_ = made_router(config_for());
  SplitMixRng rng_{17};
};

TEST(RouterConstruction, UnknownPolicyIsAConfigError) {
  RouterConfig c;
  c.routing.policy = "nope";
  const auto router = Router::make(c);
  ASSERT_FALSE(router);
  EXPECT_EQ(router.error(), "unknown routing policy: nope");
}

TEST_F(RouterTest, FirstTurnIsNewThenStickyAndTheHomeIsRemembered) {
  const Decision first = route(turn(1));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.route, Route::new_conversation);
  EXPECT_EQ(router_.home_of(1, seconds(0)), first.replica);
  router_.finish(*first.replica);
  for (int i = 1; i <= 5; ++i) {
    const Decision next = route(turn(1, 1000 + 400 * i), i);
    EXPECT_EQ(next.replica, first.replica);
    EXPECT_EQ(next.route, Route::sticky);
    router_.finish(*next.replica);
  }
  const RouterView v = router_.view(seconds(5));
  EXPECT_EQ(v.totals.new_conversations, 1u);
  EXPECT_EQ(v.totals.sticky, 5u);
  EXPECT_EQ(v.totals.in_flight, 0u);
  EXPECT_EQ(v.sticky_percent, 100.0);
  EXPECT_EQ(v.sessions[*first.replica].active_conversations, 1u);
  EXPECT_EQ(v.sessions[*first.replica].held_tokens, 3000u);
  EXPECT_EQ(v.live_sessions, 1u);
}

TEST_F(RouterTest, AbandonedAttemptIsNotCountedAndTheRetryCountsOnce) {
  const Decision first = route(turn(1));
  router_.finish(*first.replica);
  // The home refuses the next turn before any byte: the gateway abandons the attempt and routes again
  // with the home marked unhealthy, as its failover retry does.
  const Decision sticky = route(turn(1), 1);
  ASSERT_EQ(sticky.route, Route::sticky);
  router_.abandon(sticky);
  metrics_[*first.replica].healthy = false;
  const Decision retry = route(turn(1), 1);
  ASSERT_EQ(retry.route, Route::failover);
  ASSERT_NE(retry.replica, first.replica);
  router_.finish(*retry.replica);
  const RouterView v = router_.view(seconds(1));
  EXPECT_EQ(v.totals.new_conversations, 1u);
  EXPECT_EQ(v.totals.sticky, 0u);
  EXPECT_EQ(v.totals.failover, 1u);
  EXPECT_EQ(v.totals.routed(), 2u);
  EXPECT_EQ(v.totals.in_flight, 0u);
}

TEST_F(RouterTest, NewConversationsSpreadAcrossReplicasEvenBetweenTurns) {
  // Conversations finish their turn (in_flight back to 0) but stay active: placement still spreads them.
  std::vector<int> per_replica(4);
  for (std::uint64_t k = 0; k < 16; ++k) {
    const Decision d = route(turn(k));
    ASSERT_EQ(d.route, Route::new_conversation);
    ++per_replica[*d.replica];
    router_.finish(*d.replica);
  }
  EXPECT_EQ(per_replica, (std::vector<int>{4, 4, 4, 4}));
}

TEST_F(RouterTest, SpillKeepsTheHomeAndCountsSpilledIn) {
  const Decision first = route(turn(1));
  const ReplicaIndex home = *first.replica;
  // Load the home above the threshold (8) with pinned requests: 1 + 8 = 9 in flight.
  for (int i = 0; i < 8; ++i) {
    RequestFacts pin = turn(100 + i);
    pin.pin = home;
    ASSERT_EQ(route(pin).route, Route::pinned);
  }
  const Decision spilled = route(turn(1, 5000), 1);
  ASSERT_EQ(spilled.route, Route::spilled);
  EXPECT_NE(spilled.replica, first.replica);
  EXPECT_EQ(router_.home_of(1, seconds(1)), home);
  const RouterView v = router_.view(seconds(1));
  EXPECT_EQ(v.counters[*spilled.replica].spilled_in, 1u);
  EXPECT_EQ(v.counters[home].client_pinned, 8u);
  EXPECT_EQ(v.counters[home].in_flight, 9u);
  EXPECT_EQ(v.sessions[home].held_tokens,
            1000u * 9 - 1000 + 5000);  // the spilled turn's prompt counts at home
  ASSERT_TRUE(v.sticky_percent);
  EXPECT_DOUBLE_EQ(*v.sticky_percent, 0.0);
  // Home drains: the conversation comes back.
  router_.finish(home);
  const Decision back = route(turn(1), 2);
  EXPECT_EQ(back.replica, home);
  EXPECT_EQ(back.route, Route::sticky);
  EXPECT_DOUBLE_EQ(*router_.view(seconds(2)).sticky_percent, 50.0);
}

TEST_F(RouterTest, PinnedNewConversationIsHomedOnThePin) {
  RequestFacts f = turn(5);
  f.pin = 3;
  EXPECT_EQ(route(f).replica, 3u);
  EXPECT_EQ(router_.home_of(5, seconds(0)), 3u);
  // A pin on a known conversation does not move its home.
  f.pin = 1;
  EXPECT_EQ(route(f).route, Route::pinned);
  EXPECT_EQ(router_.home_of(5, seconds(0)), 3u);
}

TEST_F(RouterTest, FailoverReHomesTheConversation) {
  const Decision first = route(turn(1));
  metrics_[*first.replica].healthy = false;
  const Decision moved = route(turn(1), 1);
  ASSERT_EQ(moved.route, Route::failover);
  EXPECT_NE(moved.replica, first.replica);
  EXPECT_EQ(router_.home_of(1, seconds(1)), moved.replica);
  metrics_[*first.replica].healthy = true;
  EXPECT_EQ(where(route(turn(1), 2)), where(Decision{moved.replica, Route::sticky, NoReplicaReason::none}));
  EXPECT_EQ(router_.view(seconds(2)).counters[*moved.replica].failover, 1u);
}

TEST_F(RouterTest, NoHealthyReplicaCountsUnroutedAndChangesNothing) {
  for (auto& m : metrics_) {
    m.healthy = false;
  }
  const Decision d = route(turn(1));
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.reason, NoReplicaReason::no_healthy_replica);
  const RouterView v = router_.view(seconds(0));
  EXPECT_EQ(v.unrouted, 1u);
  EXPECT_EQ(v.totals.routed(), 0u);
  EXPECT_EQ(v.live_sessions, 0u);
}

TEST_F(RouterTest, AffinityToggleAtRuntime) {
  const Decision first = route(turn(1));
  router_.finish(*first.replica);
  set_affinity(false);
  EXPECT_FALSE(router_.routing_config().affinity);
  // vLLM's rule (core::vllm_lb_score): the idle replica wins.
  for (std::size_t i = 0; i < metrics_.size(); ++i) {
    metrics_[i].running = i == 2 ? 0 : 5;
    metrics_[i].scrape_generation = 1;
  }
  const Decision balanced = route(turn(1), 1);
  EXPECT_EQ(where(balanced), where(Decision{2u, Route::balanced, NoReplicaReason::none}));
  router_.finish(2);
  // Balanced requests re-home to where the cache is freshest, so turning affinity on again sticks there.
  set_affinity(true);
  EXPECT_EQ(where(route(turn(1), 2)), where(Decision{2u, Route::sticky, NoReplicaReason::none}));
}

TEST_F(RouterTest, SentSinceScrapeResetsWhenTheScrapeGenerationChanges) {
  set_affinity(false);
  for (int i = 0; i < 3; ++i) {
    route(turn(static_cast<std::uint64_t>(i)));
  }
  Snapshot s = router_.snapshot(metrics_, seconds(0));
  std::uint32_t sent = 0;
  for (const auto& r : s.replicas) {
    sent += r.sent_since_scrape;
  }
  EXPECT_EQ(sent, 3u);
  for (auto& m : metrics_) {
    ++m.scrape_generation;
  }
  s = router_.snapshot(metrics_, seconds(0));
  for (const auto& r : s.replicas) {
    EXPECT_EQ(r.sent_since_scrape, 0u);
  }
  EXPECT_EQ(
      s.replicas[0].in_flight + s.replicas[1].in_flight + s.replicas[2].in_flight + s.replicas[3].in_flight,
      3u);
}

TEST_F(RouterTest, SnapshotCarriesMetricsAndValidatesThem) {
  metrics_[1].kv_usage = std::numeric_limits<double>::quiet_NaN();
  metrics_[2].kv_usage = 3.0;
  metrics_[3].kv_capacity_tokens = 40'000;
  metrics_[3].waiting = 2;
  const Snapshot s = router_.snapshot(metrics_, seconds(0));
  EXPECT_EQ(s.replicas[1].kv_usage, 0.0);
  EXPECT_EQ(s.replicas[2].kv_usage, 1.0);
  EXPECT_EQ(s.replicas[3].kv_capacity_tokens, 40'000u);
  EXPECT_EQ(s.replicas[3].waiting, 2u);
  EXPECT_EQ(s.spill_threshold(), 8u);
}

TEST_F(RouterTest, SpillThresholdAndPolicyChangeAtRuntime) {
  RoutingConfig routing = router_.routing_config();
  routing.spill_threshold = SpillThreshold{2};
  ASSERT_TRUE(router_.set_routing(routing));
  EXPECT_EQ(router_.view(seconds(0)).spill_label, "2");
  routing.spill_threshold = SpillThreshold{};
  routing.max_num_seqs = 64;
  ASSERT_TRUE(router_.set_routing(routing));
  EXPECT_EQ(router_.view(seconds(0)).spill_label, "16 (auto)");
  routing.policy = "bogus";
  routing.affinity = false;
  EXPECT_FALSE(router_.set_routing(routing));
  EXPECT_EQ(router_.routing_config().policy, "affinity");
  EXPECT_TRUE(router_.routing_config().affinity) << "a refused change changes nothing";
  routing.policy = "round-robin";
  routing.affinity = true;
  EXPECT_TRUE(router_.set_routing(routing));
  EXPECT_EQ(route(turn(1)).route, Route::balanced);
  EXPECT_EQ(router_.routing_config().policy, "round-robin");
}

TEST_F(RouterTest, ConversationsExpireAfterTheTtl) {
  SessionTableConfig sessions;
  sessions.idle_ttl = minutes(1);
  sessions.active_window = seconds(10);
  router_.set_session_config(sessions);
  route(turn(1));
  EXPECT_EQ(router_.view(seconds(5)).sessions.size(), 4u);
  EXPECT_EQ(router_.view(seconds(11)).live_sessions, 1u);
  EXPECT_EQ(route(turn(1), 61).route, Route::new_conversation);
}

TEST_F(RouterTest, AnEndedConversationStopsCountingAfterThreeTypicalGaps) {
  // Four conversations, one per replica, each coming back every 10 s; conversation 2 ends after its turn
  // at 20 s. From 20 + 3 x 10 s on, its home counts no active conversation, and a new one goes there
  // (the three others hold one live conversation each). With the old fixed 5-minute window the ended
  // conversation (the one holding the most tokens) would have kept its home looking busiest.
  std::vector<ReplicaIndex> homes;
  for (std::uint64_t k = 0; k < 4; ++k) {
    const Decision d = route(turn(k), 0);
    router_.finish(*d.replica);
    homes.push_back(*d.replica);
  }
  for (std::int64_t t = 10; t <= 60; t += 10) {
    for (std::uint64_t k = 0; k < 4; ++k) {
      if (k == 2 && t > 20) {
        continue;
      }
      const Decision d = route(turn(k, 1000 + static_cast<std::uint32_t>(t) * 40), t);
      ASSERT_EQ(d.replica, homes[k]);
      router_.finish(*d.replica);
    }
  }
  const RouterView v = router_.view(seconds(61));
  EXPECT_EQ(v.sessions[homes[2]].active_conversations, 0u);
  const Decision fresh = route(turn(99), 61);
  EXPECT_EQ(fresh.route, Route::new_conversation);
  EXPECT_EQ(fresh.replica, homes[2]);
  EXPECT_EQ(router_.home_of(2, seconds(61)), homes[2]) << "still remembered until the idle TTL";
}

TEST(RouterProperty, NewConversationsGoWhereOnlyEndedConversationsLive) {
  // Random turn gaps (8-12 s) and a random conversation that ends: once it has been away for 45 s
  // (more than 3 typical gaps), every new conversation is placed on its home, whatever the RNG.
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    Router router = made_router(config_for());
    SplitMixRng rng{seed};
    SplitMixRng gaps{seed * 7919};
    const std::vector<ReplicaMetrics> metrics(4);
    std::vector<ReplicaIndex> homes;
    std::vector<std::int64_t> next(4, 0);
    const std::uint64_t ended = seed % 4;
    for (std::uint64_t k = 0; k < 4; ++k) {
      const Decision d = router.route(turn(k), metrics, std::chrono::milliseconds(0), rng);
      router.finish(*d.replica);
      homes.push_back(*d.replica);
      next[k] = 8000 + static_cast<std::int64_t>(gaps.uniform(4000));
    }
    std::int64_t ended_at = 0;
    for (std::int64_t now = 0; now < 120'000; now += 100) {
      for (std::uint64_t k = 0; k < 4; ++k) {
        if (next[k] > now || (k == ended && now > 30'000)) {
          continue;
        }
        const Decision d = router.route(turn(k, 12'000), metrics, std::chrono::milliseconds(now), rng);
        ASSERT_EQ(d.replica, homes[k]);
        router.finish(*d.replica);
        if (k == ended) {
          ended_at = now;
        }
        next[k] = now + 8000 + static_cast<std::int64_t>(gaps.uniform(4000));
      }
    }
    const auto t = std::chrono::milliseconds(std::max<std::int64_t>(ended_at + 45'000, 120'000));
    const Decision d = router.route(turn(1000 + seed), metrics, t, rng);
    ASSERT_EQ(d.replica, homes[ended]) << "seed " << seed;
  }
}

TEST_F(RouterTest, UncountedRoutingGoesPinThenHealthyHomeThenBalancedAndCountsNothing) {
  const auto home = *route(turn(1)).replica;
  const auto before = router_.view(seconds(0));
  RequestFacts pinned = turn(1);
  pinned.pin = (home + 1) % 4;
  EXPECT_EQ(router_.route_uncounted(pinned, metrics_, seconds(0), rng_),
            (Decision{pinned.pin, Route::pinned, NoReplicaReason::none}));
  EXPECT_EQ(router_.route_uncounted(turn(1), metrics_, seconds(0), rng_),
            (Decision{home, Route::sticky, NoReplicaReason::none}));
  metrics_[home].healthy = false;
  const Decision away = router_.route_uncounted(turn(1), metrics_, seconds(0), rng_);
  EXPECT_EQ(away.route, Route::balanced);
  ASSERT_TRUE(away.ok());
  EXPECT_NE(*away.replica, home);
  const Decision fresh = router_.route_uncounted(turn(2), metrics_, seconds(0), rng_);
  EXPECT_EQ(fresh.route, Route::balanced);
  // Nothing counted, nothing remembered, no in_flight to finish.
  const auto after = router_.view(seconds(0));
  EXPECT_EQ(after.totals.in_flight, before.totals.in_flight);
  EXPECT_EQ(after.live_sessions, before.live_sessions);
  EXPECT_EQ(router_.home_of(1, seconds(0)), home);
  EXPECT_FALSE(router_.home_of(2, seconds(0)));
}

TEST_F(RouterTest, RequestWithoutSessionIsNotRemembered) {
  const Decision d = route(RequestFacts{});
  EXPECT_EQ(d.route, Route::new_conversation);
  EXPECT_EQ(router_.view(seconds(0)).live_sessions, 0u);
}

TEST_F(RouterTest, FinishNeverUnderflowsOrTouchesUnknownReplicas) {
  router_.finish(0);
  router_.finish(99);
  EXPECT_EQ(router_.view(seconds(0)).totals.in_flight, 0u);
}

}  // namespace
}  // namespace warden::core
