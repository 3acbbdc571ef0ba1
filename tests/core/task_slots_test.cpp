// Task slots: whole tasks held to what the caches hold, over scripted snapshots, and the count of tasks
// under way kept from the requests alone.
#include <gtest/gtest.h>

#include "core/decide.hpp"
#include "core/helpers.hpp"
#include "core/task_slots.hpp"

namespace warden::core {
namespace {

using namespace std::chrono_literals;
using testing::idle_snapshot;
using testing::known_conversation;
using testing::new_conversation;
using testing::routed;

constexpr ReplicaSet only(ReplicaIndex i) {
  return ReplicaSet{1} << i;
}

RequestFacts counted_start(std::optional<ReplicaIndex> home, ReplicaSet room) {
  RequestFacts f = home ? known_conversation(*home) : new_conversation();
  f.task_start = true;
  f.task_room = room;
  return f;
}

TEST(TaskSlots, ATaskStartWaitsWhileNoReplicaHasAFreeSlot) {
  ScriptedRng rng;
  const Snapshot s = idle_snapshot(2);
  EXPECT_TRUE(decide(s, counted_start(0, 0), rng).queued());
  EXPECT_TRUE(decide(s, counted_start(std::nullopt, 0), rng).queued());
  // A slot on an unhealthy replica is no slot.
  Snapshot down = s;
  down.replicas[1].healthy = false;
  EXPECT_TRUE(decide(down, counted_start(0, only(1)), rng).queued());
}

TEST(TaskSlots, ATaskStartStaysHomeWhenItsHomeHasASlot) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(2);
  s.replicas[0].in_flight = 3;  // busier than replica 1, still home
  EXPECT_EQ(decide(s, counted_start(0, only(0) | only(1)), rng), routed(0, Route::sticky));
}

TEST(TaskSlots, ATaskStartGoesWhereASlotIsFree) {
  ScriptedRng rng;
  Snapshot s = idle_snapshot(3);
  s.replicas[2].in_flight = 5;  // the only free slot is on the busiest replica
  EXPECT_EQ(decide(s, counted_start(0, only(2)), rng), routed(2, Route::rehomed));
  EXPECT_EQ(decide(s, counted_start(std::nullopt, only(2)), rng), routed(2, Route::new_conversation));
}

TEST(TaskSlots, RequestsOfATaskUnderWayAndUncountedStartsAreNeverHeld) {
  ScriptedRng rng;
  const Snapshot s = idle_snapshot(2);
  RequestFacts under_way = counted_start(0, 0);
  under_way.task_start = false;
  EXPECT_EQ(decide(s, under_way, rng), routed(0, Route::sticky));
  RequestFacts uncounted = counted_start(0, 0);
  uncounted.task_room.reset();
  EXPECT_EQ(decide(s, uncounted, rng), routed(0, Route::sticky));
}

// Two replicas of 30,000 KV tokens; tasks counted at 10,000 tokens each: three slots per replica.
std::vector<ReplicaState> two_replicas() {
  std::vector<ReplicaState> r(2);
  for (auto& replica : r) {
    replica.kv_capacity_tokens = 30'000;
  }
  return r;
}

TEST(TaskSlots, SlotsAreKvCapacityOverATasksTokens) {
  TaskSlots slots({.enabled = true, .task_tokens = 10'000});
  EXPECT_EQ(slots.slots(30'000), 3u);
  EXPECT_EQ(slots.slots(29'999), 2u);
  EXPECT_EQ(slots.slots(5'000), 1u);  // a replica always has one
  EXPECT_EQ(slots.slots(0), UINT32_MAX);
}

TEST(TaskSlots, AReplicaIsFullWithAsManyTasksAsSlotsAndFreesWhenOneEnds) {
  TaskSlots slots({.enabled = true, .task_tokens = 10'000, .quiet = 5s});
  const auto replicas = two_replicas();
  for (std::uint64_t session = 1; session <= 3; ++session) {
    slots.routed(session, 0, true, 1000, 0s);
  }
  EXPECT_EQ(slots.room(replicas, 1000, 1s), only(1));
  // A subagent's request joins its session's task: no second slot.
  slots.routed(1, 1, false, 1000, 1s);
  EXPECT_EQ(slots.under_way(1, 1s), 0u);
  // The session's next task start ends its task, wherever the new one goes.
  slots.task_starting(2, 2s);
  EXPECT_EQ(slots.room(replicas, 1000, 2s), only(0) | only(1));
  EXPECT_EQ(slots.under_way(0, 2s), 2u);
}

TEST(TaskSlots, CountedInTokensAReplicaFitsTasksUpToFillTimesItsCapacity) {
  TaskSlots slots({.enabled = true, .fill = 1.0, .quiet = 5s});
  const auto replicas = two_replicas();
  slots.routed(1, 0, true, 12'000, 0s);
  slots.routed(1, 0, false, 20'000, 1s);  // the task's largest prompt counts
  EXPECT_EQ(slots.room(replicas, 10'000, 1s), only(0) | only(1));
  EXPECT_EQ(slots.room(replicas, 10'001, 1s), only(1));
  // A replica without a task under way takes any start, however large.
  EXPECT_EQ(slots.room(replicas, 40'000, 1s), only(1));
}

TEST(TaskSlots, AQuietSessionHasNoTaskUnderWay) {
  TaskSlots slots({.enabled = true, .task_tokens = 10'000, .quiet = 5s});
  slots.routed(1, 0, true, 1000, 0s);
  slots.routed(1, 0, false, 1000, 1s);  // a subagent, in flight with the main thread
  slots.finished(1, 10s);
  EXPECT_EQ(slots.under_way(0, 20s), 1u);  // one request still in flight
  slots.finished(1, 30s);
  EXPECT_EQ(slots.under_way(0, 34s), 1u);  // a tool runs
  EXPECT_EQ(slots.under_way(0, 35s), 0u);
  // Its next request (not a task start) counts again where it goes.
  slots.routed(1, 1, false, 1000, 40s);
  EXPECT_EQ(slots.under_way(1, 40s), 1u);
}

TEST(TaskSlots, MeasuredTaskTokensAreTheMeanLargestPromptOfEndedTasks) {
  TaskSlots slots({.enabled = true, .task_tokens = 0, .quiet = 5s});
  EXPECT_EQ(slots.slots(30'000), UINT32_MAX);  // nothing known yet
  slots.routed(1, 0, true, 4'000, 0s);
  slots.routed(1, 0, false, 12'000, 1s);
  EXPECT_EQ(slots.task_tokens(), 12'000);  // the task under way, until one ends
  slots.routed(2, 0, true, 8'000, 1s);
  slots.task_starting(1, 2s);
  slots.task_starting(2, 2s);
  EXPECT_EQ(slots.task_tokens(), 10'000);
  EXPECT_EQ(slots.slots(30'000), 3u);
}

}  // namespace
}  // namespace warden::core
