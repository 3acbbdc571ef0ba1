// Task admission packing by what the tasks under way are expected to reach (TaskAdmission::packing growth
// and remaining), over plain snapshots and through the Router.
#include <gtest/gtest.h>

#include <vector>

#include "core/decide.hpp"
#include "core/helpers.hpp"
#include "core/made_router.hpp"
#include "core/router.hpp"
#include "core/task_admission.hpp"
#include "core/tasks_under_way.hpp"

namespace warden::core {
namespace {

using std::chrono::seconds;
using testing::idle_snapshot;
using testing::routed;

constexpr std::uint64_t kCapacity = 167'776;  // one RTX 5090's pool of a 27B hybrid model (107 x 1,568)

RequestFacts new_task(std::uint64_t key, std::uint32_t prompt) {
  RequestFacts f = testing::new_conversation(key, prompt);
  f.thread.session = key;
  f.offers_tools = true;
  return f;
}

// Replicas of kCapacity tokens, each with two tasks under way that are expected to reach `reach` tokens
// together; a task is measured at 63k tokens, grown by 18k from its first prompt.
Snapshot reaching(std::initializer_list<std::uint64_t> reach, TaskPacking packing) {
  Snapshot s = idle_snapshot(reach.size(), 4);
  s.routing.task_admission.packing = packing;
  s.task_tokens = 63'000;
  s.task_growth = 18'000;
  std::size_t i = 0;
  for (const std::uint64_t r : reach) {
    ReplicaState& state = s.replicas[i++];
    state.kv_capacity_tokens = kCapacity;
    state.tasks_under_way = 2;
    state.active_conversations = 2;
    state.held_tokens = r / 2;
    state.tasks_tokens = r / 2;
    state.tasks_reach_tokens = r;
  }
  return s;
}

TEST(TaskPacking, ANewTaskFitsWhenWhatTheTasksReachAndItsOwnGrowthFit) {
  const Snapshot s = reaching({120'000}, TaskPacking::growth);
  const ReplicaState& r = s.replicas[0];
  EXPECT_TRUE(has_task_room(s, r, 14'000)) << "120k + 14k + 18k = 152k within 168k";
  EXPECT_FALSE(has_task_room(s, r, 40'000)) << "120k + 40k + 18k = 178k past it";
  Snapshot mean = s;
  mean.routing.task_admission.packing = TaskPacking::mean;
  EXPECT_FALSE(has_task_room(mean, mean.replicas[0], 14'000)) << "today's rule: 3 x 63k = 189k";
}

// The tasks on a replica share their prompt start (system prompt and tools): the cache holds it once.
TEST(TaskPacking, SharedCountsTheStartTheTasksShareOnce) {
  Snapshot s = reaching({140'000}, TaskPacking::growth);
  s.task_start_tokens = 12'000;
  EXPECT_FALSE(has_task_room(s, s.replicas[0], 14'000)) << "growth: 140k + 14k + 18k = 172k";
  s.routing.task_admission.packing = TaskPacking::shared;
  EXPECT_TRUE(has_task_room(s, s.replicas[0], 14'000)) << "two copies of the 12k start off: 148k";
  EXPECT_TRUE(has_task_room(s, s.replicas[0], 5'000)) << "at most the prompt is start: 140k - 10k + 23k";
  EXPECT_FALSE(has_task_room(s, s.replicas[0], 40'000)) << "140k - 24k + 40k + 18k = 174k";
  s.task_start_tokens = 0;
  EXPECT_FALSE(has_task_room(s, s.replicas[0], 14'000)) << "no start known: growth's rule";
}

TEST(TaskPacking, WhatTheConversationsHoldNowBoundsItFromBelow) {
  Snapshot s = reaching({100'000}, TaskPacking::growth);
  EXPECT_DOUBLE_EQ(tasks_reach(s.replicas[0]), 100'000);
  EXPECT_TRUE(has_task_room(s, s.replicas[0], 14'000));
  s.replicas[0].held_tokens = 110'000;  // subagents and sessions between tasks hold more
  s.replicas[0].peer_held_tokens = 30'000;
  EXPECT_DOUBLE_EQ(tasks_reach(s.replicas[0]), 140'000);
  EXPECT_FALSE(has_task_room(s, s.replicas[0], 14'000));
}

TEST(TaskPacking, BeforeATaskEndedTodaysRuleApplies) {
  Snapshot s = reaching({0}, TaskPacking::growth);
  s.task_tokens = 0;
  s.task_growth = 0;
  s.replicas[0].tasks_under_way = 2;
  EXPECT_FALSE(has_task_room(s, s.replicas[0], 14'000)) << "two tasks a replica, 40 % each";
  s.replicas[0].tasks_under_way = 1;
  EXPECT_TRUE(has_task_room(s, s.replicas[0], 14'000));
}

TEST(TaskPacking, NothingUnderWayOrNoCapacityKnownIsRoom) {
  Snapshot s = reaching({500'000}, TaskPacking::remaining);
  s.replicas[0].tasks_under_way = 0;
  EXPECT_TRUE(has_task_room(s, s.replicas[0], 200'000));
  s.replicas[0].tasks_under_way = 2;
  s.replicas[0].kv_capacity_tokens = 0;
  EXPECT_TRUE(has_task_room(s, s.replicas[0], 14'000));
}

TEST(TaskPacking, ANewTaskGoesWhereTheTasksReachLeastRoomOrWaits) {
  ScriptedRng rng;
  Snapshot s = reaching({150'000, 130'000, 160'000}, TaskPacking::growth);
  EXPECT_EQ(decide(s, new_task(7, 14'000), rng), routed(1, Route::new_conversation));
  s.replicas[1].tasks_reach_tokens = 140'000;
  EXPECT_TRUE(decide(s, new_task(7, 14'000), rng).queued()) << "172k: no replica has room";
}

// Through the Router: each task under way counts its last prompt and what it is still expected to add
// (growth: as the ended tasks that grew further did; remaining: a mean task's growth less its own).
TEST(TaskPacking, TheRouterProjectsEachTaskUnderWayFromTheTasksThatEnded) {
  for (const TaskPacking packing :
       {TaskPacking::mean, TaskPacking::growth, TaskPacking::remaining, TaskPacking::shared}) {
    RoutingConfig routing{.max_num_seqs = 4};
    routing.task_admission.packing = packing;
    Router router = made_router(router_config(routing));
    std::vector<ReplicaMetrics> metrics(1);
    metrics[0].kv_capacity_tokens = 10'000'000;
    SplitMixRng rng{3};
    // Two tasks ended, grown by 10k and 30k: a task's mean growth is 20k.
    for (const std::uint64_t key : {1, 2}) {
      ASSERT_TRUE(router.route(new_task(key, 14'000), metrics, seconds(0), rng).ok());
    }
    router.answered(new_task(1, 24'000), /*final_text=*/true);
    router.answered(new_task(2, 44'000), /*final_text=*/true);
    ASSERT_TRUE(router.route(new_task(3, 50'000), metrics, seconds(1), rng).ok());
    ASSERT_TRUE(router.route(new_task(4, 14'000), metrics, seconds(1), rng).ok());
    RequestFacts grown = new_task(4, 29'000);  // 15k into its task
    ASSERT_TRUE(router.route(grown, metrics, seconds(2), rng).ok());
    const Snapshot s = router.snapshot(metrics, seconds(2));
    EXPECT_DOUBLE_EQ(s.task_growth, 20'000);
    EXPECT_DOUBLE_EQ(s.task_start_tokens, 14'000) << "the smallest first prompt of a new task";
    const std::uint64_t reach = s.replicas[0].tasks_reach_tokens;
    if (packing == TaskPacking::growth || packing == TaskPacking::shared) {
      EXPECT_EQ(reach, 50'000U + 20'000 + 29'000 + 15'000) << "the 30k task went on 15k past 15k";
    } else if (packing == TaskPacking::remaining) {
      EXPECT_EQ(reach, 50'000U + 20'000 + 29'000 + 5'000) << "20k mean, 15k grown";
    } else {
      EXPECT_EQ(reach, 0U) << "packing mean counts a measured task size instead";
    }
  }
}

TEST(TasksUnderWay, ATaskKeepsItsFirstPromptAsItGrows) {
  TasksUnderWay tasks;
  RequestFacts turn = new_task(1, 14'000);
  EXPECT_FALSE(tasks.first_prompt(turn));
  tasks.routed(turn, routed(0, Route::new_conversation), seconds(0));
  turn.home = 0;
  turn.prompt_tokens = 40'000;
  tasks.routed(turn, routed(0, Route::sticky), seconds(1));
  EXPECT_EQ(tasks.first_prompt(turn), std::optional<std::uint32_t>(14'000));
  std::vector<double> reach(2, 0.0);
  tasks.project(reach, [](double grown) { return grown; });
  EXPECT_DOUBLE_EQ(reach[0], 40'000 + 26'000);
  EXPECT_DOUBLE_EQ(reach[1], 0);
  tasks.answered(turn, true);
  EXPECT_FALSE(tasks.first_prompt(turn));
}

}  // namespace
}  // namespace warden::core
