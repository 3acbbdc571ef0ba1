// The other wardens' load (shared state) in the snapshot: counted like this warden's own by the scores,
// and carried from ReplicaMetrics by the Router.
#include <gtest/gtest.h>

#include <vector>

#include "core/decide.hpp"
#include "core/helpers.hpp"
#include "core/router.hpp"

namespace warden::core {
namespace {

using testing::idle_snapshot;
using testing::new_conversation;
using testing::routed;

TEST(PeerLoad, ScoresCountTheOtherWardensLikeThisOne) {
  ReplicaState own;
  own.in_flight = 2;
  own.active_conversations = 3;
  own.held_tokens = 1'000;
  own.kv_capacity_tokens = 10'000;
  ReplicaState split = own;
  split.in_flight = 1;
  split.peer_in_flight = 1;
  split.active_conversations = 1;
  split.peer_active_conversations = 2;
  split.held_tokens = 400;
  split.peer_held_tokens = 600;
  EXPECT_DOUBLE_EQ(placement_score(split, 32), placement_score(own, 32));
  EXPECT_DOUBLE_EQ(load_score(split, 32), load_score(own, 32));
}

TEST(PeerLoad, ANewConversationAvoidsTheReplicaOtherWardensFilled) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(2);
  s.replicas[0].peer_active_conversations = 1;
  EXPECT_EQ(decide(s, new_conversation(), rng), routed(1, Route::new_conversation));
}

TEST(PeerLoad, TheRouterCarriesPeerMetricsIntoItsSnapshotAndAdoptsAHome) {
  Router router;
  std::vector<ReplicaMetrics> metrics(2);
  metrics[1].peer_in_flight = 4;
  metrics[1].peer_active_conversations = 5;
  metrics[1].peer_held_tokens = 6;
  const Snapshot s = router.snapshot(metrics, Time{0});
  EXPECT_EQ(s.replicas[1].peer_in_flight, 4u);
  EXPECT_EQ(s.replicas[1].peer_active_conversations, 5u);
  EXPECT_EQ(s.replicas[1].peer_held_tokens, 6u);
  EXPECT_EQ(s.replicas[0].peer_in_flight, 0u);

  ScriptedRng rng;
  RequestFacts facts = new_conversation();
  ASSERT_EQ(router.route(facts, metrics, Time{1}, rng).replica, 0u);
  router.finish(0);
  router.adopt_home(facts.session->hash, 1, 10, Time{2});  // another warden placed it first
  EXPECT_EQ(router.home_of(facts.session->hash, Time{3}), 1u);
  const Decision adopted = router.route(facts, metrics, Time{4}, rng);
  EXPECT_EQ(adopted.replica, 1u);
  EXPECT_EQ(adopted.route, Route::sticky);
}

}  // namespace
}  // namespace warden::core
