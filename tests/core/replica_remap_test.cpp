// A reload's new replica list: each replica found again by its identity (URL), and the Router's state
// (homes, counters, in-flight slots, prefill backlog) following it.
#include "core/replica_remap.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/router.hpp"

namespace warden::core {
namespace {

using std::chrono::seconds;
using Ids = std::vector<std::string>;
using Map = std::vector<std::optional<ReplicaIndex>>;

TEST(ReplicaRemap, RemainingReplicasAreFoundByIdentityWhereverTheyAreNow) {
  const auto r = remap_by_identity(Ids{"a", "b", "c"}, Ids{"c", "d", "a"});
  EXPECT_EQ(r.to, (Map{0u + 2, std::nullopt, 0u}));
  EXPECT_EQ(r.new_count, 3u);
  EXPECT_EQ(r.removed(), (std::vector<int>{1}));
  EXPECT_EQ(r.added(), (std::vector<int>{1}));
  EXPECT_FALSE(r.identity());
}

TEST(ReplicaRemap, TheSameListIsTheIdentityAndAnAppendIsNot) {
  EXPECT_TRUE(remap_by_identity(Ids{"a", "b"}, Ids{"a", "b"}).identity());
  const auto grown = remap_by_identity(Ids{"a", "b"}, Ids{"a", "b", "c"});
  EXPECT_FALSE(grown.identity());
  EXPECT_EQ(grown.to, (Map{0u, 1u}));
  EXPECT_EQ(grown.added(), (std::vector<int>{2}));
  EXPECT_TRUE(grown.removed().empty());
}

TEST(ReplicaRemap, AnIdentityListedTwiceMatchesInOrder) {
  const auto r = remap_by_identity(Ids{"a", "a", "b"}, Ids{"b", "a"});
  EXPECT_EQ(r.to, (Map{1u, std::nullopt, 0u}));
}

TEST(ReplicaRemap, ValuesFollowTheirReplicaAndNewOnesStartFresh) {
  const auto r = remap_by_identity(Ids{"a", "b", "c"}, Ids{"c", "d", "a"});
  EXPECT_EQ(remap_values(r, std::vector<int>{10, 20, 30}, -1), (std::vector<int>{30, -1, 10}));
}

RequestFacts turn(std::uint64_t key) {
  RequestFacts f;
  f.session = SessionKey{key};
  f.prompt_tokens = 1000;
  return f;
}

class RouterRemapTest : public ::testing::Test {
 protected:
  Decision route(std::uint64_t key, std::int64_t t) {
    return router_.route(turn(key), metrics_, seconds(t), rng_);
  }
  // Routes conversations until one is homed on `replica`; returns its key.
  std::uint64_t conversation_on(ReplicaIndex replica) {
    for (std::uint64_t key = 1; key < 200; ++key) {
      if (!router_.home_of(key, seconds(0))) {
        const Decision d = route(key, 0);
        router_.finish(*d.replica);
        if (*d.replica == replica) {
          return key;
        }
      }
    }
    ADD_FAILURE() << "no conversation placed on replica " << replica;
    return 0;
  }
  std::vector<ReplicaMetrics> metrics_ = std::vector<ReplicaMetrics>(3);
  Router router_{};
  SplitMixRng rng_{5};
};

// [a, b, c] becomes [c, d, a]: a's conversation moves to index 2, c's to 0, b's fails over at its next turn.
TEST_F(RouterRemapTest, HomesFollowTheirReplicaAndARemovedOnesFailOver) {
  const auto on_a = conversation_on(0);
  const auto on_b = conversation_on(1);
  const auto on_c = conversation_on(2);
  router_.remap_replicas(remap_by_identity(Ids{"a", "b", "c"}, Ids{"c", "d", "a"}));
  EXPECT_EQ(router_.home_of(on_a, seconds(1)), 2u);
  EXPECT_EQ(router_.home_of(on_c, seconds(1)), 0u);
  EXPECT_EQ(router_.home_of(on_b, seconds(1)), gone_replica);
  const Decision a = route(on_a, 1);
  EXPECT_EQ(a.route, Route::sticky);
  EXPECT_EQ(a.replica, 2u);
  const Decision b = route(on_b, 1);
  EXPECT_EQ(b.route, Route::failover);
  ASSERT_TRUE(b.replica);
  EXPECT_LT(*b.replica, 3u);
}

// A request in flight on a replica that remains is finished at its new index; one on a removed replica
// leaves no slot behind; routed counts are never lost from the totals.
TEST_F(RouterRemapTest, InFlightSlotsAndCountersFollowTheirReplica) {
  const auto on_a = conversation_on(0);
  const auto on_b = conversation_on(1);
  ASSERT_EQ(route(on_a, 1).replica, 0u);
  ASSERT_EQ(route(on_b, 1).replica, 1u);
  const auto routed_before = router_.view(seconds(1)).totals.routed();
  router_.remap_replicas(remap_by_identity(Ids{"a", "b", "c"}, Ids{"c", "a"}));
  metrics_.resize(2);
  RouterView v = router_.view(seconds(1));
  ASSERT_EQ(v.counters.size(), 2u);
  EXPECT_EQ(v.counters[1].in_flight, 1u);  // a's request, now at index 1
  EXPECT_EQ(v.counters[0].in_flight, 0u);  // c had none; b's slot is gone with b
  EXPECT_EQ(v.totals.routed(), routed_before);
  router_.finish(1);
  EXPECT_EQ(router_.view(seconds(1)).counters[1].in_flight, 0u);
}

}  // namespace
}  // namespace warden::core
