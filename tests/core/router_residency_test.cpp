// The Router with the replicas' KV cache events (ReplicaMetrics::kv): where they are live they replace the
// estimate of what a replica holds of the request being routed.
#include <gtest/gtest.h>

#include <vector>

#include "core/made_router.hpp"
#include "core/router.hpp"

namespace warden::core {
namespace {

using std::chrono::seconds;

constexpr std::uint32_t bs = 16;

RequestFacts turn(std::uint64_t key, std::uint32_t tokens, std::uint64_t start = 0) {
  RequestFacts f;
  f.session = SessionKey{key};
  f.prompt_tokens = tokens;
  f.thread.start = start;
  return f;
}

std::vector<std::uint64_t> run(std::uint64_t first, std::size_t n) {
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(first + i);
  }
  return out;
}

class RouterResidency : public ::testing::Test {
 protected:
  RouterResidency() {
    for (std::size_t i = 0; i < metrics_.size(); ++i) {
      index_[i].set_complete(true);
      metrics_[i].kv = &index_[i];
      metrics_[i].kv_capacity_tokens = 100'000;
    }
  }
  Decision route(RequestFacts f, std::int64_t t = 0) {
    const Decision d = router_.route(f, metrics_, seconds(t), rng_);
    if (d.ok()) {
      router_.finish(*d.replica);
    }
    return d;
  }
  // A request of `key` beginning with `start`, pinned to `replica`.
  Decision pinned(std::uint64_t key, std::uint64_t start, ReplicaIndex replica, std::int64_t t) {
    RequestFacts f = turn(key, 1000, start);
    f.pin = replica;
    return route(f, t);
  }
  void store(std::size_t replica, const std::vector<std::uint64_t>& hashes,
             std::optional<std::uint64_t> parent, std::uint64_t thread) {
    index_[replica].stored(KvStore{hashes, parent, bs, KvTier::gpu, std::nullopt, true, thread});
  }
  std::vector<KvIndex> index_ = std::vector<KvIndex>(4);
  std::vector<ReplicaMetrics> metrics_ = std::vector<ReplicaMetrics>(4);
  Router router_ = made_router(RouterConfig{});
  SplitMixRng rng_{17};
};

TEST_F(RouterResidency, TheExpectationIsWhatTheEventsSayTheChosenReplicaHolds) {
  const Decision first = route(turn(1, 1000));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first.expected_exact);
  EXPECT_EQ(first.expected_cached_tokens, 0U);
  store(*first.replica, run(100, 60), std::nullopt, 1);  // its prefill stored 60 blocks
  const Decision second = route(turn(1, 1400), 1);
  EXPECT_EQ(second.replica, first.replica);
  EXPECT_EQ(second.route, Route::sticky);
  EXPECT_TRUE(second.expected_exact);
  EXPECT_EQ(second.expected_cached_tokens, 60 * bs);
  EXPECT_EQ(second.prefill_tokens, 1400 - 1000);  // the backlog counts the estimate's prefill
  // The engine evicted most of it: the expectation follows, whatever the previous prompt was.
  index_[*first.replica].removed(run(110, 50), KvTier::gpu, std::nullopt);
  const Decision third = route(turn(1, 1800), 2);
  EXPECT_EQ(third.expected_cached_tokens, 10 * bs);
}

TEST_F(RouterResidency, WithoutEventsTheEstimateStays) {
  for (auto& m : metrics_) {
    m.kv = nullptr;
  }
  const Decision first = route(turn(1, 1000));
  const Decision second = route(turn(1, 1400), 1);
  EXPECT_FALSE(second.expected_exact);
  EXPECT_EQ(second.expected_cached_tokens, 1000U);  // the previous prompt at home
  EXPECT_EQ(second.replica, first.replica);
}

TEST_F(RouterResidency, AThreadNoTableKnowsGoesWhereTheEventsShowIt) {
  // Another warden placed the conversation on replica 2: its blocks there name the thread.
  store(2, run(100, 50), std::nullopt, 9);
  const Decision d = route(turn(9, 1000));
  EXPECT_EQ(d.replica, 2U);
  EXPECT_EQ(d.route, Route::sticky);
  EXPECT_EQ(d.expected_cached_tokens, 50 * bs);
  EXPECT_EQ(router_.home_of(9, seconds(0)), 2U);
}

TEST_F(RouterResidency, ANewThreadExpectsTheStartItSharesWithThreadsOfTheSameStart) {
  constexpr std::uint64_t start = 0xABC;
  pinned(1, start, 3, 0);
  store(3, run(100, 40), std::nullopt, 1);  // the first conversation: system prompt and its message
  pinned(2, start, 3, 1);
  store(3, run(200, 20), 129, 2);  // the second branches from it after 30 blocks (the shared start)
  const Decision c = pinned(3, start, 3, 2);
  EXPECT_TRUE(c.expected_exact);
  EXPECT_EQ(c.expected_cached_tokens, 30 * bs);
  const Decision d = pinned(4, start, 1, 3);  // nothing of that start on replica 1
  EXPECT_TRUE(d.expected_exact);
  EXPECT_EQ(d.expected_cached_tokens, 0U);
}

TEST_F(RouterResidency, ANewThreadPrefersWhereTheEventsShowItsStartNotWhereItWentOnce) {
  constexpr std::uint64_t start = 0xABC;
  const auto turn_of = [&](std::uint64_t key, std::optional<ReplicaIndex> pin, std::int64_t t) {
    RequestFacts f = turn(key, 1000, start);
    f.thread.long_start = true;
    f.pin = pin;
    return route(f, t);
  };
  turn_of(1, 3, 0);
  store(3, run(100, 40), std::nullopt, 1);
  turn_of(2, 3, 1);
  store(3, run(200, 20), 129, 2);  // the start: 30 blocks, held by replica 3 (which carries two threads)
  const Decision held = turn_of(3, std::nullopt, 2);
  EXPECT_EQ(held.replica, 3U);  // comparable load, start resident: rule 7 places it there
  // The engine evicted the start there: the events take replica 3 out of the preference.
  index_[3].removed(run(100, 40), KvTier::gpu, std::nullopt);
  const Decision gone = turn_of(4, std::nullopt, 3);
  EXPECT_NE(gone.replica, 3U);
  EXPECT_EQ(gone.expected_cached_tokens, 0U);
}

TEST_F(RouterResidency, APromptThatBeganAnewTeachesNoLossAndItsNextTurnFindsItsNewChain) {
  constexpr std::uint64_t start = 0xABC;
  const Decision d1 = route(turn(9, 2000, start));
  ASSERT_TRUE(d1.ok());
  EXPECT_FALSE(d1.thread_anew);
  const ReplicaIndex home = *d1.replica;
  store(home, run(100, 30), std::nullopt, 1);  // the shared start, another thread's
  store(home, run(200, 30), 129, 9);           // thread 9's own 30 blocks
  // Its prompt shrinks to less than half (a compaction): it shares only the start with the chain, and the
  // index learns nothing from where its stores part.
  const Decision d2 = route(turn(9, 900, start), 1);
  EXPECT_EQ(d2.replica, home);
  EXPECT_TRUE(d2.thread_anew);
  EXPECT_EQ(d2.expected_cached_tokens, 30 * bs);  // the start, not the chain it no longer continues
  index_[home].sent(d2.thread_key, d2.thread_anew);
  store(home, run(400, 5), 129, 9);
  const Decision d3 = route(turn(9, 1000, start), 2);
  EXPECT_FALSE(d3.thread_anew);
  EXPECT_EQ(d3.replica, home);
  EXPECT_EQ(d3.expected_cached_tokens, 35 * bs);
}

TEST_F(RouterResidency, AHomeHoldingTheStartIsNotLeftForAReplicaHoldingOnlyTheStart) {
  constexpr std::uint64_t start = 0xABC;
  const Decision d1 = route(turn(9, 1000, start));
  ASSERT_TRUE(d1.ok());
  const ReplicaIndex home = *d1.replica;
  const auto other = static_cast<ReplicaIndex>((home + 1) % 4);
  // The thread ran on the other replica once, from the prompt's start: only the start is left there.
  store(other, run(100, 30), std::nullopt, 9);
  store(home, run(100, 30), std::nullopt, 1);
  store(home, run(200, 20), 129, 9);
  // A request that began again after the start (a compaction) taught the home's index a long tail loss:
  // its own chain promises less than the start it extends.
  index_[home].sent(9, false);
  store(home, run(400, 2), 129, 9);
  const Decision d2 = route(turn(9, 1000, start), 1);
  EXPECT_EQ(d2.replica, home);
  EXPECT_EQ(d2.route, Route::sticky);
  EXPECT_EQ(d2.expected_cached_tokens, 30 * bs);
}

TEST_F(RouterResidency, ANewThreadFindsTheStartAfterTheThreadsThatBranchedOffItAreGone) {
  constexpr std::uint64_t start = 0xABC;
  pinned(1, start, 3, 0);
  store(3, run(100, 40), std::nullopt, 1);  // the first thread stored the start (30 blocks) and its own
  pinned(2, start, 3, 1);
  store(3, run(200, 20), 129, 2);  // short threads (subagents) branch off it after the start
  pinned(3, start, 3, 2);
  store(3, run(300, 10), 129, 3);
  // Their own blocks are evicted: their chains are gone from the index; the start stays resident.
  index_[3].removed(run(200, 20), KvTier::gpu, std::nullopt);
  index_[3].removed(run(300, 10), KvTier::gpu, std::nullopt);
  const Decision d = pinned(4, start, 3, 3);
  EXPECT_TRUE(d.expected_exact);
  EXPECT_EQ(d.expected_cached_tokens, 30 * bs);  // through the thread that stored it, and its length kept
}

TEST_F(RouterResidency, AStartsLengthIsKeptWhenTheThreadsThatToldItAreGone) {
  constexpr std::uint64_t start = 0xABC;
  pinned(1, start, 3, 0);
  store(3, run(100, 40), std::nullopt, 1);
  pinned(2, start, 3, 1);
  store(3, run(200, 20), 129, 2);  // where it branched tells the start: 30 blocks
  EXPECT_EQ(pinned(3, start, 3, 2).expected_cached_tokens, 30 * bs);
  // Everything is evicted, and a new thread stores the start again from the prompt's start: no thread
  // has branched off it yet.
  index_[3].removed(run(100, 40), KvTier::gpu, std::nullopt);
  index_[3].removed(run(200, 20), KvTier::gpu, std::nullopt);
  pinned(4, start, 3, 3);
  store(3, run(100, 35), std::nullopt, 4);
  const Decision d = pinned(5, start, 3, 4);
  EXPECT_EQ(d.expected_cached_tokens, 30 * bs);
}

TEST_F(RouterResidency, ASpilledRequestExpectsWhatItsThreadsEarlierSpillOnThatReplicaStored) {
  RoutingConfig routing = router_.routing_config();
  routing.max_num_seqs = 32;  // a spill threshold of 8 in flight
  ASSERT_TRUE(router_.set_routing(routing));
  const Decision first = route(turn(1, 1000));
  ASSERT_TRUE(first.ok());
  const ReplicaIndex home = *first.replica;
  store(home, run(100, 60), std::nullopt, 1);
  // The home over the spill threshold (8 in flight), two others busy: the spills go to the fourth.
  const auto load = [&](ReplicaIndex replica, int n) {
    for (int i = 0; i < n; ++i) {
      RequestFacts pin = turn(1000 + replica * 100 + i, 100);
      pin.pin = replica;
      ASSERT_TRUE(router_.route(pin, metrics_, seconds(1), rng_).ok());
    }
  };
  load(home, 9);
  load(static_cast<ReplicaIndex>((home + 1) % 4), 3);
  load(static_cast<ReplicaIndex>((home + 2) % 4), 3);
  const Decision spill = route(turn(1, 1400), 2);
  ASSERT_EQ(spill.route, Route::spilled);
  EXPECT_EQ(spill.expected_cached_tokens, 0U);
  store(*spill.replica, run(500, 80), std::nullopt, spill.thread_key);  // under the spill's own key
  const Decision again = route(turn(1, 1500), 3);
  ASSERT_EQ(again.route, Route::spilled);
  ASSERT_EQ(again.replica, spill.replica);
  EXPECT_EQ(again.expected_cached_tokens, 80 * bs);
}

TEST_F(RouterResidency, TheBaselinesIgnoreTheEvents) {
  RoutingConfig routing = router_.routing_config();
  routing.policy = "session-hash";
  ASSERT_TRUE(router_.set_routing(routing));
  store(2, run(100, 50), std::nullopt, 9);
  const Decision d = route(turn(9, 1000));
  EXPECT_FALSE(d.expected_exact);
}

}  // namespace
}  // namespace warden::core
