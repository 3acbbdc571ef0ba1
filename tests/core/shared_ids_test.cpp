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
  EXPECT_EQ(ids.key(7, 100), 7U);
  EXPECT_EQ(ids.key(7, 100), 7U) << "one conversation growing";
  EXPECT_EQ(ids.key(7, 200), 7U) << "a compaction, or a second conversation: not told yet";
  const std::uint64_t a = ids.key(7, 100);
  EXPECT_NE(a, 7U) << "the first message came back: two conversations take turns";
  const std::uint64_t b = ids.key(7, 200);
  EXPECT_NE(b, 7U);
  EXPECT_NE(a, b);
  EXPECT_EQ(ids.key(7, 100), a) << "each conversation keeps its key";
  EXPECT_EQ(ids.key_of(7, 200), b);
  EXPECT_EQ(ids.key(7, 300), ids.key_of(7, 300)) << "a third one gets its own at once";
  EXPECT_EQ(ids.shared(), 1U);
  EXPECT_EQ(ids.key(8, 0), 8U) << "no first message: the id's own key";
}

TEST(SharedIds, CompactionsNeverMakeAnIdShared) {
  SharedIds ids;
  for (std::uint64_t summary = 1; summary <= 20; ++summary) {
    for (int turn = 0; turn < 3; ++turn) {
      EXPECT_EQ(ids.key(9, summary), 9U);
    }
  }
  EXPECT_EQ(ids.shared(), 0U);
  EXPECT_EQ(ids.key_of(9, 1), 9U);
}

RequestFacts agent_turn(std::uint64_t id, std::uint64_t first, std::uint32_t prompt) {
  RequestFacts f = testing::new_conversation(id, prompt);
  f.thread.session = id;
  f.first_message = first;
  f.offers_tools = true;
  return f;
}

// Three agents sharing one id, each 60k tokens, on four replicas that hold 100k each: without telling them
// apart all three live on the id's home; once the id is found shared, each agent is a conversation of its
// own, placed by load (away from the id's home, which its first turns still count), and keeps its replica.
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
