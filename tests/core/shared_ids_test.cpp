// Session ids shared by several conversations: found when an id's first messages take turns, never by a
// conversation whose first message changes once (a compaction).
#include "core/shared_ids.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "core/router.hpp"
#include "helpers.hpp"
#include "made_router.hpp"

namespace warden::core {
namespace {

using std::chrono::seconds;

TEST(SharedIds, AnIdIsSharedOnceAFirstMessageComesBackAfterAnother) {
  SharedIds ids;
  EXPECT_EQ(ids.key(7, 100, seconds(1)), 7U);
  EXPECT_EQ(ids.key(7, 100, seconds(2)), 7U) << "one conversation growing";
  EXPECT_EQ(ids.key(7, 200, seconds(3)), 7U) << "a compaction, or a second conversation: not told yet";
  EXPECT_EQ(ids.key(7, 100, seconds(4)), 7U) << "the first message came back: the id's owner keeps its key";
  const std::uint64_t b = ids.key(7, 200, seconds(5));
  EXPECT_NE(b, 7U) << "the other conversation gets a key of its own";
  EXPECT_EQ(ids.key(7, 100, seconds(6)), 7U);
  EXPECT_EQ(ids.key_of(7, 200), b);
  const std::uint64_t c = ids.key(7, 300, seconds(7));
  EXPECT_NE(c, 7U) << "a third one gets its own at once";
  EXPECT_NE(c, b);
  EXPECT_EQ(ids.shared(), 1U);
  EXPECT_EQ(ids.key(8, 0, seconds(8)), 8U) << "no first message: the id's own key";
}

TEST(SharedIds, CompactionsNeverMakeAnIdShared) {
  SharedIds ids;
  for (std::uint64_t summary = 1; summary <= 20; ++summary) {
    for (int turn = 0; turn < 3; ++turn) {
      EXPECT_EQ(ids.key(9, summary, seconds(summary * 3 + turn)), 9U);
    }
  }
  EXPECT_EQ(ids.shared(), 0U);
  EXPECT_EQ(ids.key_of(9, 1), 9U);
}

// One request carrying a victim's id with another first message, then the victim's next turn: the victim
// keeps the id's own key (its home), whatever the intruder sends after.
TEST(SharedIds, AnIntruderNeverReKeysTheConversationThatHeldTheId) {
  SharedIds ids;
  for (int turn = 0; turn < 3; ++turn) {
    EXPECT_EQ(ids.key(7, 100, seconds(turn)), 7U);
  }
  EXPECT_EQ(ids.key(7, 666, seconds(3)), 7U) << "the intruder's first request";
  EXPECT_EQ(ids.key(7, 100, seconds(4)), 7U) << "the victim's next turn stays on the id's key";
  EXPECT_NE(ids.key(7, 666, seconds(5)), 7U) << "the intruder is a conversation of its own";
  EXPECT_EQ(ids.key(7, 100, seconds(6)), 7U);
  EXPECT_EQ(ids.key_of(7, 100), 7U);
}

// A client that fills the table with ids it makes shared: the table stays at its bound, the least recently
// seen id goes first, and an id idle beyond the TTL is forgotten (its next request starts afresh).
TEST(SharedIds, TheTableIsBoundedByCountAndIdleTime) {
  SharedIds ids(SharedIdsConfig{.max_ids = 4, .idle_ttl = seconds(60)});
  const auto make_shared = [&](std::uint64_t id, int at) {
    (void)ids.key(id, 1, seconds(at));
    (void)ids.key(id, 2, seconds(at));
    return ids.key(id, 1, seconds(at));
  };
  for (std::uint64_t id = 1; id <= 100; ++id) {
    (void)make_shared(id, 1);
    EXPECT_LE(ids.size(), 4U);
  }
  EXPECT_EQ(ids.shared(), 100U);
  EXPECT_NE(ids.key_of(100, 2), 100U) << "the latest ids are still known";
  EXPECT_EQ(ids.key_of(1, 2), 1U) << "the first ones went";
  EXPECT_EQ(ids.key(100, 2, seconds(100)), 100U) << "idle beyond the TTL: forgotten, owned afresh";
  EXPECT_EQ(ids.size(), 2U) << "two idle ids go per request (a bounded cost), the least recent first";
  (void)ids.key(5, 1, seconds(101));
  EXPECT_EQ(ids.size(), 2U) << "the last idle one went, a new one came";
}

RequestFacts agent_turn(std::uint64_t id, std::uint64_t first, std::uint32_t prompt) {
  RequestFacts f = testing::new_conversation(id, prompt);
  f.thread.session = id;
  f.first_message = first;
  f.offers_tools = true;
  return f;
}

// Three agents sharing one id, each 60k tokens, on four replicas that hold 100k each: without telling them
// apart all three live on the id's home; once the id is found shared, the agent the id was first seen with
// keeps the id's home, each other agent is a conversation of its own, placed by load (away from the id's
// home), and keeps its replica.
TEST(SharedIds, TheRouterPlacesTheConversationsOfASharedIdApart) {
  Router router = made_router(router_config(RoutingConfig{.max_num_seqs = 4}));
  std::vector<ReplicaMetrics> metrics(4);
  for (auto& m : metrics) {
    m.kv_capacity_tokens = 100'000;
  }
  SplitMixRng rng{5};
  std::vector<std::optional<ReplicaIndex>> homes(3);
  for (int turn = 0; turn < 4; ++turn) {
    for (std::uint64_t agent = 0; agent < 3; ++agent) {
      const Decision d =
          router.route(agent_turn(42, 1000 + agent, 60'000), metrics, seconds(turn * 3 + 1), rng);
      ASSERT_TRUE(d.ok());
      router.finish(*d.replica);
      if (turn >= 2) {
        if (homes[agent]) {
          EXPECT_EQ(d.replica, homes[agent]) << "agent " << agent << " keeps its replica";
        }
        homes[agent] = d.replica;
      }
    }
  }
  EXPECT_NE(homes[0], homes[1]);
  EXPECT_NE(homes[1], homes[2]);
  EXPECT_NE(homes[0], homes[2]);
}

}  // namespace
}  // namespace warden::core
