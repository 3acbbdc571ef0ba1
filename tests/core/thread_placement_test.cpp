// Threads: a new thread prefers the replicas that hold its siblings or its prompt start at comparable load
// (a bounded number of conversations more, a working set within the margin) and under the spill threshold;
// side requests move nothing; the thread table is bounded.
#include <gtest/gtest.h>

#include <set>

#include "core/decide.hpp"
#include "core/made_router.hpp"
#include "core/router.hpp"
#include "core/thread_index.hpp"
#include "helpers.hpp"

namespace warden::core {
namespace {

using namespace warden::core::testing;
using std::chrono::seconds;

// A new thread whose system prompt and tools fill the start's digest (long_start), preferring `preferred`.
RequestFacts new_thread(ReplicaSet preferred) {
  RequestFacts f = new_conversation(7);
  f.preferred = preferred;
  f.thread.long_start = true;
  return f;
}

// Replicas of 100k tokens of KV cache holding the given working sets (thousands of tokens): a tenth of
// the score per 10k tokens.
Snapshot with_held(std::initializer_list<std::uint64_t> thousands) {
  Snapshot s = idle_snapshot(thousands.size());
  std::size_t i = 0;
  for (auto value : thousands) {
    s.replicas[i].kv_capacity_tokens = 100'000;
    s.replicas[i++].held_tokens = value * 1000;
  }
  return s;
}

TEST(ThreadPlacement, APreferredReplicaWithinTheMarginWins) {
  SplitMixRng rng(1);
  // Replica 2 holds 9k tokens; replica 0 would hold the thread's 1k: 0.08 more.
  const Snapshot s = with_held({0, 5, 9});
  EXPECT_EQ(decide(s, new_thread(0b100), rng), routed(2, Route::new_conversation));
  EXPECT_EQ(decide(s, new_thread(0), rng), routed(0, Route::new_conversation));
}

TEST(ThreadPlacement, APreferredReplicaBeyondTheMarginLoses) {
  SplitMixRng rng(1);
  const Snapshot s = with_held({0, 5, 12});  // 0.11 more than replica 0 with the thread: beyond the margin
  EXPECT_EQ(decide(s, new_thread(0b100), rng), routed(0, Route::new_conversation));
  // Of two preferred replicas, the better-scoring one.
  EXPECT_EQ(decide(s, new_thread(0b110), rng), routed(1, Route::new_conversation));
}

TEST(ThreadPlacement, APreferredReplicaMayCarryUpToTheSlotMarginMore) {
  SplitMixRng rng(1);
  Snapshot s = idle_snapshot(2, 64);  // max_num_seqs 64: up to 2 more requests and conversations
  ASSERT_EQ(cached_start_slots(64), 2u);
  s.replicas[1].active_conversations = 1;
  s.replicas[1].in_flight = 1;
  EXPECT_EQ(decide(s, new_thread(0b10), rng), routed(1, Route::new_conversation));
  s.replicas[1].active_conversations = 2;  // 3 more: load differs by more than the margin, so it spreads
  EXPECT_EQ(decide(s, new_thread(0b10), rng), routed(0, Route::new_conversation));
  s.replicas[0].active_conversations = 1;  // 2 more again
  EXPECT_EQ(decide(s, new_thread(0b10), rng), routed(1, Route::new_conversation));
}

TEST(ThreadPlacement, TheSlotMarginIsOnePer32BatchSlotsAndAtLeastOne) {
  EXPECT_EQ(cached_start_slots(4), 1u);
  EXPECT_EQ(cached_start_slots(0), 1u);
  EXPECT_EQ(cached_start_slots(32), 1u);
  EXPECT_EQ(cached_start_slots(256), 8u);
  SplitMixRng rng(1);
  Snapshot s = idle_snapshot(2, 4);
  s.replicas[1].active_conversations = 1;  // a quarter of the batch more: still one
  EXPECT_EQ(decide(s, new_thread(0b10), rng), routed(1, Route::new_conversation));
  s.replicas[1].in_flight = 1;
  EXPECT_EQ(decide(s, new_thread(0b10), rng), routed(0, Route::new_conversation));
}

TEST(ThreadPlacement, AShortStartIsNotWorthAConversationMore) {
  SplitMixRng rng(1);
  Snapshot s = idle_snapshot(2);
  s.replicas[1].active_conversations = 1;
  RequestFacts f = new_thread(0b10);
  f.thread.long_start = false;  // a few hundred tokens in common at most: placed by load
  EXPECT_EQ(decide(s, f, rng), routed(0, Route::new_conversation));
  s.replicas[0].active_conversations = 1;  // as loaded: the start still decides
  EXPECT_EQ(decide(s, f, rng), routed(1, Route::new_conversation));
}

TEST(ThreadPlacement, TheCachedStartCountsOnceInTheWorkingSet) {
  SplitMixRng rng(1);
  // Replica 1 holds 14k tokens (a 13k-token start among them); the new thread's prompt is 13k tokens.
  // On replica 0 it would hold 13k, on replica 1 its start is there already: 14k against 13k, within the
  // margin, where the scores before placing (0 against 0.14 + a conversation) are not.
  Snapshot s = with_held({0, 14});
  s.replicas[1].active_conversations = 1;
  RequestFacts f = new_thread(0b10);
  f.prompt_tokens = 13'000;
  EXPECT_EQ(decide(s, f, rng), routed(1, Route::new_conversation));
  // A prompt much smaller than the holder's working set: the holder would fill far more of its cache.
  f.prompt_tokens = 1'000;
  EXPECT_EQ(decide(s, f, rng), routed(0, Route::new_conversation));
}

TEST(ThreadPlacement, NeverStacksAThreadWhereItsNextTurnWouldSpill) {
  SplitMixRng rng(1);
  Snapshot s = with_held({0, 5});
  s.routing.spill_threshold.fixed = 8;
  s.replicas[0].in_flight = 8;
  s.replicas[1].in_flight = 8;
  EXPECT_EQ(decide(s, new_thread(0b10), rng), routed(0, Route::new_conversation));
  s.replicas[0].in_flight = 7;
  s.replicas[1].in_flight = 7;
  EXPECT_EQ(decide(s, new_thread(0b10), rng), routed(1, Route::new_conversation));
}

TEST(ThreadPlacement, UnhealthyOrOutOfRangePreferencesAreIgnored) {
  SplitMixRng rng(1);
  Snapshot s = with_held({0, 1});
  s.replicas[1].healthy = false;
  EXPECT_EQ(decide(s, new_thread(0b10), rng), routed(0, Route::new_conversation));
  EXPECT_EQ(decide(s, new_thread(ReplicaSet{1} << 63), rng), routed(0, Route::new_conversation));
}

TEST(ThreadPlacement, KnownThreadsStayHomeWhateverTheyPrefer) {
  SplitMixRng rng(1);
  RequestFacts f = known_conversation(1, 7);
  f.preferred = 0b100;
  EXPECT_EQ(decide(with_held({0, 9, 0}), f, rng), routed(1, Route::sticky));
}

// Through the Router: thread keys, homes, the start table and side requests.
class ThreadRouterTest : public ::testing::Test {
 protected:
  static RequestFacts request(std::uint64_t session, std::uint64_t thread, std::uint64_t start,
                              std::uint32_t tokens = 1000) {
    RequestFacts f;
    f.session = SessionKey{thread};
    f.thread.session = session;
    f.thread.start = start;
    f.thread.long_start = true;
    f.prompt_tokens = tokens;
    return f;
  }
  Decision route(const RequestFacts& f, std::int64_t t = 0) {
    const Decision d = router_.route(f, metrics_, seconds(t), rng_);
    if (d.ok() && release_) {
      router_.finish(*d.replica);
    }
    return d;
  }
  std::vector<ReplicaMetrics> metrics_ = std::vector<ReplicaMetrics>(4);
  Router router_ = made_router(router_config(RoutingConfig{.max_num_seqs = 32}));
  SplitMixRng rng_{3};
  bool release_ = true;
};

TEST_F(ThreadRouterTest, MainThreadAndSubagentHaveTheirOwnHomesAndStayOnThem) {
  const Decision main = route(request(1, 1, 100));
  const Decision sub = route(request(1, 2, 200));
  ASSERT_TRUE(main.ok() && sub.ok());
  EXPECT_EQ(main.route, Route::new_conversation);
  EXPECT_EQ(sub.route, Route::new_conversation);
  EXPECT_EQ(router_.home_of(1, seconds(0)), main.replica);
  EXPECT_EQ(router_.home_of(2, seconds(0)), sub.replica);
  for (int i = 1; i <= 3; ++i) {
    const Decision sub_again = route(request(1, 2, 200), i);
    EXPECT_EQ(sub_again.replica, sub.replica);
    EXPECT_EQ(sub_again.route, Route::sticky);
    const Decision main_again = route(request(1, 1, 100), i);
    EXPECT_EQ(main_again.replica, main.replica);
    EXPECT_EQ(main_again.route, Route::sticky);
  }
  const RouterView v = router_.view(seconds(3));
  EXPECT_EQ(v.threads, 1u);
  EXPECT_EQ(v.threaded_sessions, 1u);
  const auto sessions = router_.threaded_sessions(10, seconds(3));
  ASSERT_EQ(sessions.size(), 1u);
  ASSERT_EQ(sessions[0].threads.size(), 2u);
  EXPECT_EQ(sessions[0].threads[0].key, 1u);  // the main thread first
  EXPECT_EQ(sessions[0].threads[1].home, sub.replica);
}

TEST_F(ThreadRouterTest, ANewConversationGoesWhereItsPromptStartWasServedWhenLoadIsComparable) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    Router router = made_router(router_config(RoutingConfig{.max_num_seqs = 32}));
    SplitMixRng rng(seed);
    const auto send = [&](const RequestFacts& f) {
      const Decision d = router.route(f, metrics_, seconds(0), rng);
      router.finish(*d.replica);
      return d;
    };
    // Four conversations with four starts: one per replica (each goes to the idlest).
    std::vector<ReplicaIndex> homes;
    for (std::uint64_t s = 1; s <= 4; ++s) {
      homes.push_back(*send(request(s, s, 100 + s)).replica);
    }
    std::sort(homes.begin(), homes.end());
    EXPECT_EQ(homes, (std::vector<ReplicaIndex>{0, 1, 2, 3}));
    // Every replica holds one conversation: a new one with the second's start goes to the second's
    // replica, whatever the tie-break would have chosen.
    EXPECT_EQ(send(request(10, 10, 102)).replica, router.home_of(2, seconds(0)));
  }
}

TEST_F(ThreadRouterTest, IdenticalNewConversationsGatherOnTheirStartOnlyWithinTheSlotMargin) {
  // Between turns (nothing in flight), with no KV capacity known: the first conversation's replica takes
  // an identical new one while it carries at most cached_start_slots(32) = 1 conversation more than an
  // idle replica; the next one goes to an idle replica, and the one after joins it there.
  const Decision first = route(request(1, 1, 100));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(route(request(2, 2, 100)).replica, first.replica);
  const Decision third = route(request(3, 3, 100));
  ASSERT_TRUE(third.ok());
  EXPECT_NE(third.replica, first.replica);
  EXPECT_EQ(route(request(4, 4, 100)).replica, third.replica);
  // Two replicas with two conversations, two idle: the fifth spreads again.
  const Decision fifth = route(request(5, 5, 100));
  EXPECT_NE(fifth.replica, first.replica);
  EXPECT_NE(fifth.replica, third.replica);
}

TEST_F(ThreadRouterTest, ANewConversationArrivingWhileTheFirstIsInFlightSpreads) {
  // Four agents starting at once: the first one's request is still in flight (a request and a
  // conversation more than an idle replica), so each goes to a replica of its own.
  release_ = false;
  std::set<ReplicaIndex> homes;
  for (std::uint64_t s = 1; s <= 4; ++s) {
    homes.insert(*route(request(s, s, 100)).replica);
  }
  EXPECT_EQ(homes.size(), 4u);
}

TEST_F(ThreadRouterTest, ANewSubagentPrefersItsSessionsReplicas) {
  // One conversation per replica, then a subagent of the first session's: to its main thread's replica.
  for (std::uint64_t s = 1; s <= 4; ++s) {
    route(request(s, s, 100 + s));
  }
  const ReplicaIndex main = *router_.home_of(1, seconds(0));
  EXPECT_EQ(route(request(1, 50, 999)).replica, main);
}

TEST_F(ThreadRouterTest, ASubagentThatReturnedItsResultNoLongerWeighsOnItsReplica) {
  // Two subagents of one type (start 200) of session 1, one after the other: the second joins the first
  // (a conversation more than an idle replica is within the slot margin). Then a subagent of the same
  // type in another session: while the two count as conversations there, it spreads to an idle replica;
  // once both returned their result (final text), it goes where its start is cached.
  for (const bool returned : {false, true}) {
    Router router = made_router(router_config(RoutingConfig{.max_num_seqs = 32}));
    const auto send = [&](const RequestFacts& f) {
      return *router.route(f, metrics_, seconds(0), rng_).replica;
    };
    const RequestFacts first = request(1, 2, 200);
    const RequestFacts second = request(1, 3, 200);
    const ReplicaIndex holder = send(first);
    router.finish(holder);
    ASSERT_EQ(send(second), holder);
    router.finish(holder);
    router.answered(first, false);  // a tool call: the thread goes on
    EXPECT_EQ(router.view(seconds(0)).sessions[holder].active_conversations, 2u);
    if (returned) {
      router.answered(first, true);
      router.answered(second, true);
    }
    const ReplicaIndex later = send(request(5, 6, 200));
    EXPECT_EQ(later == holder, returned) << "returned " << returned;
    // The returned threads keep their homes: a request of one is sticky and counts it again.
    const Decision again = router.route(first, metrics_, seconds(1), rng_);
    EXPECT_EQ(again.replica, holder);
    EXPECT_EQ(again.route, Route::sticky);
  }
}

TEST_F(ThreadRouterTest, AMainThreadsFinalTextKeepsItCountedAndThreadsOffIgnoresReplies) {
  const Decision main = route(request(1, 1, 100));
  ASSERT_TRUE(main.ok());
  router_.answered(request(1, 1, 100), true);  // waits for its person: still a conversation there
  EXPECT_EQ(router_.view(seconds(0)).sessions[*main.replica].active_conversations, 1u);
  RoutingConfig off = router_.routing_config();
  off.threads = false;
  ASSERT_TRUE(router_.set_routing(off));
  const Decision sub = route(request(1, 2, 200));  // one home per session: the main thread's
  EXPECT_EQ(sub.replica, main.replica);
  router_.answered(request(1, 2, 200), true);
  EXPECT_EQ(router_.view(seconds(0)).sessions[*main.replica].active_conversations, 1u);
}

TEST_F(ThreadRouterTest, ASideRequestGoesToTheSessionsHomeAndMovesNothing) {
  const Decision main = route(request(1, 1, 100));
  RequestFacts side = request(1, 1, 555, 50);
  side.thread.side = true;
  const Decision d = route(side, 1);
  EXPECT_EQ(d.replica, main.replica);
  EXPECT_EQ(d.route, Route::sticky);
  // A side request of a subagent the warden never saw goes to the main thread's home too, and the
  // subagent stays unknown.
  RequestFacts sub_side = request(1, 9, 555, 50);
  sub_side.thread.side = true;
  EXPECT_EQ(route(sub_side, 2).replica, main.replica);
  EXPECT_EQ(router_.home_of(9, seconds(2)), std::nullopt);
  EXPECT_EQ(router_.view(seconds(2)).threads, 0u);
}

TEST_F(ThreadRouterTest, ThreadsOffKeepsOneHomePerSessionAndPlacesByLoad) {
  Router router = made_router(router_config(RoutingConfig{.max_num_seqs = 32, .threads = false}));
  const auto send = [&](const RequestFacts& f) {
    const Decision d = router.route(f, metrics_, seconds(0), rng_);
    router.finish(*d.replica);
    return d;
  };
  const Decision main = send(request(1, 1, 100));
  const Decision sub = send(request(1, 2, 200));  // a subagent: the session's own home, as a later turn
  EXPECT_EQ(sub.replica, main.replica);
  EXPECT_EQ(sub.route, Route::sticky);
  EXPECT_EQ(router.home_of(2, seconds(0)), std::nullopt);
  EXPECT_EQ(router.view(seconds(0)).threads, 0u);
  // An identical new conversation goes to the idlest replica, not to where its start is cached.
  EXPECT_NE(send(request(3, 3, 100)).replica, main.replica);
}

TEST(ThreadIndex, ANewThreadIdOnEveryRequestCannotGrowASession) {
  ThreadIndex index({.max_threads_per_session = 4, .max_sessions = 100});
  std::vector<std::uint64_t> forgotten;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    for (const std::uint64_t key : index.note(1, 1000 + i, 0, seconds(static_cast<std::int64_t>(i)))) {
      forgotten.push_back(key);
    }
  }
  EXPECT_EQ(index.threads(1).size(), 4u);
  EXPECT_EQ(index.threads(), 4u);
  ASSERT_EQ(forgotten.size(), 996u);
  EXPECT_EQ(forgotten.front(), 1000u);  // the oldest goes first
  EXPECT_EQ(forgotten.back(), 1995u);
}

TEST(ThreadIndex, ManySessionsForgetTheLeastRecentlySeenOneAtATime) {
  ThreadIndex index({.max_threads_per_session = 4, .max_sessions = 10});
  std::size_t forgotten = 0;
  for (std::uint64_t s = 1; s <= 1000; ++s) {
    const auto gone = index.note(s, 5000 + s, s, seconds(static_cast<std::int64_t>(s)));
    EXPECT_EQ(gone, s > 10 ? std::vector<std::uint64_t>{5000 + s - 10} : std::vector<std::uint64_t>{})
        << "the least recently seen session's threads, and no more";
    forgotten += gone.size();
  }
  EXPECT_EQ(index.sessions(), 10u);
  EXPECT_EQ(index.threads(), index.sessions());
  EXPECT_EQ(forgotten + index.threads(), 1000u);
  EXPECT_EQ(index.threads(1000).size(), 1u);  // the most recent stays
  EXPECT_EQ(index.recent(2), (std::vector<std::uint64_t>{1000, 999}));
  // A session seen again goes to the front: the next to go is the one after it.
  (void)index.note(991, 7000, 0, seconds(1001));
  EXPECT_EQ(index.note(2000, 7001, 0, seconds(1002)), (std::vector<std::uint64_t>{5992}));
  EXPECT_EQ(index.threads(991).size(), 2u);
}

// A page of sessions walks the list from its most recent end: the same order as by last seen, no sort.
TEST(ThreadIndex, PagesOfSessionsComeMostRecentlySeenFirst) {
  ThreadIndex index;
  for (std::uint64_t s = 1; s <= 10; ++s) {
    (void)index.note(s, 100 + s, 0, seconds(static_cast<std::int64_t>(s)));
  }
  (void)index.note(3, 200, 0, seconds(11));
  EXPECT_EQ(index.recent(3), (std::vector<std::uint64_t>{3, 10, 9}));
  EXPECT_EQ(index.recent(3, 3), (std::vector<std::uint64_t>{8, 7, 6}));
  EXPECT_EQ(index.recent(5, 8), (std::vector<std::uint64_t>{2, 1}));
  EXPECT_TRUE(index.recent(5, 10).empty());
  EXPECT_TRUE(index.recent(0).empty());
}

// A crowd of sessions with full thread lists: a new session past the bound forgets one session's threads,
// never half the index (32,768 sessions' threads, a million keys, in one request before).
TEST(ThreadIndex, ANewSessionPastTheBoundForgetsOneSessionsThreads) {
  ThreadIndex index({.max_threads_per_session = 32, .max_sessions = 2'000});
  for (std::uint64_t s = 1; s <= 2'000; ++s) {
    for (std::uint64_t t = 0; t < 32; ++t) {
      ASSERT_TRUE(index.note(s, s * 100 + t, 0, seconds(static_cast<std::int64_t>(s))).empty());
    }
  }
  for (std::uint64_t s = 2'001; s <= 3'000; ++s) {
    ASSERT_EQ(index.note(s, s * 100, 0, seconds(static_cast<std::int64_t>(s))).size(), 32u);
  }
  EXPECT_EQ(index.sessions(), 2'000u);
  EXPECT_TRUE(index.threads(1'000).empty());
  EXPECT_EQ(index.threads(1'001).size(), 32u);
}

TEST_F(ThreadRouterTest, ThreadsTheIndexForgetsLeaveTheSessionTable) {
  Router small = made_router(router_config(RoutingConfig{.max_num_seqs = 32}));
  for (std::uint64_t i = 0; i < 200; ++i) {
    const Decision d = small.route(request(1, 100 + i, 7), metrics_, seconds(0), rng_);
    small.finish(*d.replica);
  }
  const RouterView v = small.view(seconds(0));
  EXPECT_EQ(v.threads, ThreadIndexConfig{}.max_threads_per_session);
  EXPECT_EQ(v.live_sessions, ThreadIndexConfig{}.max_threads_per_session);
  EXPECT_EQ(small.home_of(100, seconds(0)), std::nullopt);  // the oldest thread is gone from both
}

}  // namespace
}  // namespace warden::core
