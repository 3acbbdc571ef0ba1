// Re-homing a conversation off an overloaded home, over scripted snapshots, and through the Router.
#include <gtest/gtest.h>

#include <initializer_list>

#include "core/decide.hpp"
#include "core/helpers.hpp"
#include "core/made_router.hpp"
#include "core/rebalance.hpp"
#include "core/router.hpp"

namespace warden::core {
namespace {

using testing::idle_snapshot;
using testing::known_conversation;
using testing::routed;

constexpr std::uint64_t kCapacity = 30'000;

// Replicas with these requests in flight and conversations homed, each with a KV capacity of 30,000
// tokens; the home (replica 0) holds `home_held` tokens of conversations.
Snapshot loads(std::initializer_list<std::uint32_t> in_flight, std::initializer_list<std::uint32_t> homed,
               std::uint64_t home_held) {
  Snapshot s = idle_snapshot(in_flight.size());
  std::size_t i = 0;
  for (auto n : in_flight) {
    s.replicas[i].kv_capacity_tokens = kCapacity;
    s.replicas[i++].in_flight = n;
  }
  i = 0;
  for (auto n : homed) {
    s.replicas[i++].active_conversations = n;
  }
  s.replicas[0].held_tokens = home_held;
  return s;
}

// A turn of a conversation homed on replica 0 whose home computed `since` tokens since its previous turn.
RequestFacts turn(std::optional<std::uint64_t> since = std::nullopt) {
  RequestFacts f = known_conversation(0);
  f.home_computed_since = since;
  return f;
}

TEST(Rebalance, APrefixIsEvictedOnceTheHomeComputedItsCapacitySince) {
  ReplicaState home;
  EXPECT_FALSE(prefix_evicted(home, turn(1'000'000)));  // capacity unknown
  home.kv_capacity_tokens = kCapacity;
  EXPECT_FALSE(prefix_evicted(home, turn()));
  EXPECT_FALSE(prefix_evicted(home, turn(kCapacity - 1)));
  EXPECT_TRUE(prefix_evicted(home, turn(kCapacity)));
}

// vLLM's CPU offload keeps every block the GPU computed in host memory: a prefix the GPU evicted is loaded
// back, so it is lost only once the home computed its host capacity since.
TEST(Rebalance, BlocksOffloadedToHostMemoryStayWarmOnTheirRank) {
  ReplicaState home;
  home.kv_capacity_tokens = kCapacity;
  home.offload_capacity_tokens = 4 * kCapacity;
  EXPECT_FALSE(prefix_evicted(home, turn(kCapacity)));
  EXPECT_FALSE(prefix_evicted(home, turn(4 * kCapacity - 1)));
  EXPECT_TRUE(prefix_evicted(home, turn(4 * kCapacity)));
  ScriptedRng rng;
  Snapshot s = loads({4, 0}, {4, 0}, 2 * kCapacity);
  s.replicas[0].offload_capacity_tokens = 4 * kCapacity;
  EXPECT_EQ(decide(s, turn(kCapacity), rng), routed(0, Route::sticky)) << "evicted from the GPU only";
  EXPECT_EQ(decide(s, turn(4 * kCapacity), rng), routed(1, Route::rehomed));
}

TEST(Rebalance, AWardenWithPeersKeepsItsConversationsHome) {
  ScriptedRng rng;
  Snapshot s = loads({4, 0}, {4, 0}, 2 * kCapacity);
  ASSERT_EQ(decide(s, turn(kCapacity), rng), routed(1, Route::rehomed));
  for (auto& r : s.replicas) {
    r.peer_wardens = 1;
  }
  EXPECT_EQ(decide(s, turn(kCapacity), rng), routed(0, Route::sticky));
}

TEST(Rebalance, AnEvictedConversationGoesWhereFewerRequestsAreInFlight) {
  ScriptedRng rng;
  const Snapshot s = loads({3, 2, 1}, {1, 1, 1}, 0);
  EXPECT_EQ(decide(s, turn(kCapacity), rng), routed(2, Route::rehomed));
  EXPECT_EQ(decide(s, turn(kCapacity - 1), rng), routed(0, Route::sticky));  // probably still cached
  EXPECT_EQ(decide(loads({2, 2}, {1, 1}, 0), turn(kCapacity), rng), routed(0, Route::sticky));
}

TEST(Rebalance, AHomeWhoseWorkingSetFitsKeepsItsConversationsHoweverBusy) {
  ScriptedRng rng;
  EXPECT_EQ(decide(loads({8, 0, 0}, {8, 0, 0}, kCapacity), turn(), rng), routed(0, Route::sticky));
}

TEST(Rebalance, AnOverflowingHomeGivesAConversationAwayOnlyWhenItHoldsAndRunsTwoMore) {
  ScriptedRng rng;
  const std::uint64_t over = kCapacity + 1;
  EXPECT_EQ(decide(loads({4, 2, 3}, {4, 2, 3}, over), turn(), rng), routed(1, Route::rehomed));
  // A swing of requests in flight alone, or conversations alone, is not a lasting imbalance.
  EXPECT_EQ(decide(loads({4, 2}, {3, 2}, over), turn(), rng), routed(0, Route::sticky));
  EXPECT_EQ(decide(loads({3, 2}, {4, 2}, over), turn(), rng), routed(0, Route::sticky));
  // After the move (3 and 3 both ways) the conversation does not move back.
  Snapshot after = loads({3, 3}, {3, 3}, over);
  after.replicas[1].held_tokens = over;
  RequestFacts back = known_conversation(1);
  EXPECT_EQ(decide(after, back, rng), routed(1, Route::sticky));
}

TEST(Rebalance, NeverMovesToAnUnhealthyReplica) {
  ScriptedRng rng;
  Snapshot s = loads({3, 0, 1}, {1, 1, 1}, 0);
  s.replicas[1].healthy = false;
  EXPECT_EQ(decide(s, turn(kCapacity), rng), routed(2, Route::rehomed));
  s.replicas[2].healthy = false;
  EXPECT_EQ(decide(s, turn(kCapacity), rng), routed(0, Route::sticky));
}

TEST(Rebalance, SwitchedOffAConversationStaysOrSpillsByCountOnly) {
  ScriptedRng rng;
  Snapshot s = loads({4, 0}, {4, 0}, 2 * kCapacity);
  s.routing.rebalance = false;
  EXPECT_EQ(decide(s, turn(kCapacity), rng), routed(0, Route::sticky));
  s.replicas[0].in_flight = 9;  // over the spill threshold (8): this request only, the home is kept
  EXPECT_EQ(decide(s, turn(kCapacity), rng), routed(1, Route::spilled));
}

TEST(Rebalance, SessionTableKeepsTheComputedMarkWhileTheHomeStays) {
  SessionTable t;
  t.assign(1, 0, 100, std::chrono::seconds(0));
  EXPECT_EQ(t.lookup(1, std::chrono::seconds(0))->home_computed_at, SessionEntry::unknown);
  t.mark_computed(1, 5'000);
  t.touch(1, 200, std::chrono::seconds(1));
  EXPECT_EQ(t.lookup(1, std::chrono::seconds(1))->home_computed_at, 5'000u);
  t.assign(1, 1, 300, std::chrono::seconds(2));  // a new home: nothing is known of its count yet
  EXPECT_EQ(t.lookup(1, std::chrono::seconds(2))->home_computed_at, SessionEntry::unknown);
}

// Through the Router: the engines' computed-token counts, the mark after a turn, the move and its count.
TEST(Rebalance, TheRouterMovesAConversationWhoseHomeComputedItsCapacitySinceItsLastTurn) {
  RouterConfig config;
  config.routing.max_num_seqs = 32;
  Router router = made_router(config);
  SplitMixRng rng{3};
  std::vector<ReplicaMetrics> metrics(2);
  for (auto& m : metrics) {
    m.kv_capacity_tokens = 10'000;
    m.set_computed(0);
  }
  RequestFacts f;
  f.session = SessionKey{7};
  f.prompt_tokens = 4'000;
  const Decision first = router.route(f, metrics, std::chrono::seconds(0), rng);
  ASSERT_TRUE(first.ok());
  const ReplicaIndex home = *first.replica;
  const ReplicaIndex other = 1 - home;
  router.finish(home);
  RequestFacts busy;
  busy.session = SessionKey{8};
  busy.pin = home;
  ASSERT_TRUE(router.route(busy, metrics, std::chrono::seconds(1), rng).ok());  // 1 in flight at home
  // Its own 4,000 and 5,999 more: the prefix may still be there.
  metrics[home].set_computed(4'000 + 9'999);
  EXPECT_EQ(router.route(f, metrics, std::chrono::seconds(2), rng).route, Route::sticky);
  router.finish(home);
  metrics[home].set_computed(4'000 + 9'999 + 4'000 + 10'000);  // its turn, then the whole cache again
  const Decision next = router.route(f, metrics, std::chrono::seconds(3), rng);
  ASSERT_EQ(next.route, Route::rehomed);
  ASSERT_EQ(next.replica, other);
  EXPECT_EQ(next.prefill_tokens, 4'000u);  // the whole prompt is computed where it went
  EXPECT_EQ(router.home_of(7, std::chrono::seconds(3)), other);
  const RouterView v = router.view(std::chrono::seconds(3));
  EXPECT_EQ(v.counters[other].rehomed_in, 1u);
}

}  // namespace
}  // namespace warden::core
