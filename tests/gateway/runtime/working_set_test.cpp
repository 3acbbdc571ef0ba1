// A model's working set against its caches (gateway/runtime/working_set.hpp): the sums the admin API, the
// console and the metrics read.
#include "gateway/runtime/working_set.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace warden::gateway;

TEST(WorkingSet, AddsUpConversationsTokensAndTheHealthyReplicasCaches) {
  // The seed's host: seven replicas of ~134k tokens, 26 agents of ~58k tokens, one replica down.
  std::vector<ReplicaWorkingSet> replicas(7, ReplicaWorkingSet{true, 4, 4 * 58'000, 134'456, 16'000});
  replicas[6] = {false, 2, 2 * 58'000, 134'456, 16'000};
  const WorkingSet ws = add_up(replicas);
  EXPECT_EQ(ws.conversations, 26u);
  EXPECT_EQ(ws.held_tokens, 26u * 58'000u);
  EXPECT_EQ(ws.typical_tokens(), 58'000u);
  EXPECT_EQ(ws.gpu_tokens, 6u * 134'456u) << "a replica that is down holds nothing usable";
  EXPECT_EQ(ws.host_tokens, 6u * 16'000u);
  EXPECT_EQ(ws.capacity_tokens(), 6u * 150'456u);
}

TEST(WorkingSet, NoConversationNoTypicalContext) {
  const WorkingSet ws = add_up({});
  EXPECT_EQ(ws.conversations, 0u);
  EXPECT_EQ(ws.typical_tokens(), 0u);
  EXPECT_EQ(ws.capacity_tokens(), 0u);
  const std::vector<ReplicaWorkingSet> odd{{true, 3, 100, 0, 0}};
  EXPECT_EQ(add_up(odd).typical_tokens(), 33u) << "held tokens per conversation, rounded down";
}
