// Task admission: a new agent task waits while no replica keeps one more task warm; over scripted snapshots
// and through the Router.
#include "core/task_admission.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "core/decide.hpp"
#include "core/helpers.hpp"
#include "core/made_router.hpp"
#include "core/router.hpp"
#include "core/tasks_under_way.hpp"

namespace warden::core {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using testing::idle_snapshot;
using testing::routed;

constexpr std::uint64_t kCapacity = 167'776;  // one RTX 5090's pool of a 27B hybrid model (107 x 1,568)
constexpr double kTask = 58'000;              // a headless agent's task grows to this

// The first request of a headless agent's task: a new session's main thread, tools offered.
RequestFacts new_task(std::uint64_t key = 7, std::uint32_t prompt = 14'000) {
  RequestFacts f = testing::new_conversation(key, prompt);
  f.thread.session = key;
  f.offers_tools = true;
  return f;
}

// Replicas of kCapacity tokens with these tasks under way, each holding `held_each` tokens now.
Snapshot under_way(std::initializer_list<std::uint32_t> tasks, std::uint64_t held_each = 20'000) {
  Snapshot s = idle_snapshot(tasks.size(), 4);
  s.task_tokens = kTask;
  std::size_t i = 0;
  for (const std::uint32_t n : tasks) {
    ReplicaState& r = s.replicas[i++];
    r.kv_capacity_tokens = kCapacity;
    r.tasks_under_way = n;
    r.active_conversations = n;
    r.held_tokens = n * held_each;
  }
  return s;
}

TEST(TaskAdmission, OnlyANewAgentTasksMainThreadIsANewTask) {
  EXPECT_TRUE(starts_new_task(new_task()));
  RequestFacts chat = new_task();
  chat.offers_tools = false;
  EXPECT_FALSE(starts_new_task(chat)) << "a chat turn keeps nothing warm for later requests";
  RequestFacts under_way = new_task();
  under_way.home = 0;
  EXPECT_FALSE(starts_new_task(under_way)) << "a task under way is never held";
  RequestFacts subagent = new_task(8);
  subagent.thread.session = 7;
  EXPECT_FALSE(starts_new_task(subagent)) << "a subagent's first request belongs to its parent's task";
  RequestFacts side = new_task();
  side.thread.side = true;
  EXPECT_FALSE(starts_new_task(side));
  EXPECT_FALSE(starts_new_task(RequestFacts{})) << "no conversation identity";
}

TEST(TaskAdmission, TheTasksWorkingSetCountsEachTaskGrownToItsMeasuredSize) {
  ReplicaState r;
  r.tasks_under_way = 2;
  r.held_tokens = 30'000;
  EXPECT_DOUBLE_EQ(tasks_working_set(r, kTask), 2 * kTask);
  r.held_tokens = 200'000;  // grown past the measure
  EXPECT_DOUBLE_EQ(tasks_working_set(r, kTask), 200'000);
  r.peer_held_tokens = 100'000;  // another warden's conversations share the cache
  EXPECT_DOUBLE_EQ(tasks_working_set(r, kTask), 300'000);
}

TEST(TaskAdmission, AReplicaKeepsAsManyTasksWarmAsItsCacheHolds) {
  ReplicaState r;
  r.kv_capacity_tokens = kCapacity;
  EXPECT_TRUE(has_task_room(r, kTask)) << "nothing under way";
  r.tasks_under_way = 1;
  EXPECT_TRUE(has_task_room(r, kTask)) << "116k within 168k";
  r.tasks_under_way = 2;
  EXPECT_FALSE(has_task_room(r, kTask)) << "174k past 168k";
  r.offload_capacity_tokens = 4 * kCapacity;  // CPU offload keeps evicted blocks warm
  EXPECT_TRUE(has_task_room(r, kTask));
  ReplicaState unknown;
  unknown.tasks_under_way = 9;
  EXPECT_TRUE(has_task_room(unknown, kTask)) << "capacity unknown: nothing to judge by";
}

TEST(TaskAdmission, ANewTaskGoesWhereThereIsRoomOrWaits) {
  ScriptedRng rng;
  Snapshot s = under_way({2, 1, 2});
  EXPECT_EQ(decide(s, new_task(), rng), routed(1, Route::new_conversation));
  s = under_way({2, 2, 2});
  EXPECT_TRUE(decide(s, new_task(), rng).queued());
  RequestFacts waited = new_task();
  waited.queued_for = minutes(8);
  EXPECT_TRUE(decide(s, waited, rng).ok()) << "placed as usual at its wait bound";
  s.routing.task_admission.enabled = false;
  EXPECT_TRUE(decide(s, new_task(), rng).ok());
}

TEST(TaskAdmission, NoRequestOfATaskUnderWayIsHeld) {
  ScriptedRng rng;
  Snapshot s = under_way({3, 3});
  RequestFacts subagent = new_task(8);
  subagent.thread.session = 7;
  EXPECT_TRUE(decide(s, subagent, rng).ok());
  RequestFacts turn = new_task();
  turn.home = 0;
  turn.task_under_way = true;
  EXPECT_TRUE(decide(s, turn, rng).ok());
}

// A session's next task (its previous one ended) stays home while the contexts of the tasks under way there
// and its own fit the home's warm capacity; else it moves to a replica they fit, else it waits.
TEST(TaskAdmission, ASessionsNextTaskStaysHomeWhileItFitsElseMovesOrWaits) {
  ScriptedRng rng;
  Snapshot s = under_way({2, 2});
  s.replicas[0].tasks_tokens = 120'000;
  s.replicas[1].tasks_tokens = 150'000;
  RequestFacts next = new_task(1, 30'000);
  next.home = 0;
  next.task_start = true;
  ASSERT_TRUE(starts_next_task(next));
  EXPECT_EQ(decide(s, next, rng), routed(0, Route::sticky)) << "120k + 30k within 168k";
  next.prompt_tokens = 50'000;
  EXPECT_TRUE(decide(s, next, rng).queued()) << "170k at home, 200k on the other";
  s.replicas[1].tasks_tokens = 100'000;
  EXPECT_EQ(decide(s, next, rng), routed(1, Route::rehomed)) << "150k fit the other replica";
  s.replicas[1].healthy = false;
  EXPECT_TRUE(decide(s, next, rng).queued()) << "never to an unhealthy replica";
  s.replicas[0].tasks_under_way = 0;
  s.replicas[0].tasks_tokens = 0;
  next.prompt_tokens = 200'000;
  EXPECT_EQ(decide(s, next, rng), routed(0, Route::sticky))
      << "nothing under way at home: nothing to wait for";
}

TEST(TaskAdmission, ANextTaskIsHeldOnlyAsASessionsNextTaskAndWithinItsBound) {
  ScriptedRng rng;
  Snapshot s = under_way({2});
  s.replicas[0].tasks_tokens = 150'000;
  RequestFacts next = new_task(1, 30'000);
  next.home = 0;
  next.task_start = true;
  ASSERT_TRUE(decide(s, next, rng).queued());
  RequestFacts tool_results = next;
  tool_results.task_start = false;
  EXPECT_FALSE(starts_next_task(tool_results)) << "a client sending tool results is in a task";
  RequestFacts under_way = next;
  under_way.task_under_way = true;
  EXPECT_FALSE(starts_next_task(under_way));
  EXPECT_EQ(decide(s, under_way, rng), routed(0, Route::sticky)) << "a task under way is never held";
  RequestFacts subagent = next;
  subagent.thread.session = 9;
  EXPECT_FALSE(starts_next_task(subagent));
  RequestFacts chat = next;
  chat.offers_tools = false;
  EXPECT_FALSE(starts_next_task(chat));
  RequestFacts waited = next;
  waited.queued_for = minutes(8);
  EXPECT_EQ(decide(s, waited, rng), routed(0, Route::sticky)) << "placed as usual at its wait bound";
  s.replicas[0].kv_capacity_tokens = 0;
  EXPECT_EQ(decide(s, next, rng), routed(0, Route::sticky)) << "capacity unknown: nothing to judge by";
  s.replicas[0].kv_capacity_tokens = kCapacity;
  s.routing.task_admission.enabled = false;
  EXPECT_EQ(decide(s, next, rng), routed(0, Route::sticky));
}

// Before any task ended, a task is taken to fill half a replica's warm capacity: a fleet that starts at
// once is let in two tasks a replica, not whole.
TEST(TaskAdmission, BeforeATaskEndedAReplicaIsTakenToKeepTwoTasksWarm) {
  ScriptedRng rng;
  Snapshot s = under_way({1, 3});
  s.task_tokens = 0;
  EXPECT_DOUBLE_EQ(assumed_task_tokens(s, s.replicas[0]), 0.4 * kCapacity);
  EXPECT_EQ(decide(s, new_task(), rng), routed(0, Route::new_conversation));
  s = under_way({2, 2});
  s.task_tokens = 0;
  EXPECT_TRUE(decide(s, new_task(), rng).queued());
  s = under_way({2, 1});
  s.task_tokens = 0;
  EXPECT_EQ(decide(s, new_task(), rng), routed(1, Route::new_conversation));
  Snapshot unknown = under_way({3, 3});
  unknown.task_tokens = 0;
  for (auto& r : unknown.replicas) {
    r.kv_capacity_tokens = 0;
  }
  EXPECT_TRUE(decide(unknown, new_task(), rng).ok()) << "capacities unknown: nothing is held";
}

TEST(TaskAdmission, TheRouterMeasuresATaskByTheLastPromptOfItsMainThread) {
  Router router = made_router(router_config(RoutingConfig{.max_num_seqs = 4}));
  std::vector<ReplicaMetrics> metrics(1);
  metrics[0].kv_capacity_tokens = kCapacity;
  SplitMixRng rng{3};
  EXPECT_EQ(router.view(seconds(0)).task_tokens, 0);
  RequestFacts first = new_task(1);
  ASSERT_TRUE(router.route(first, metrics, seconds(0), rng).ok());
  RequestFacts last = new_task(1, 60'000);
  router.answered(last, /*final_text=*/false);
  EXPECT_EQ(router.view(seconds(1)).task_tokens, 0) << "a tool call does not end the task";
  router.answered(last, /*final_text=*/true);
  EXPECT_EQ(router.view(seconds(1)).task_tokens, 60'000);
  RequestFacts subagent = new_task(2, 5'000);
  subagent.thread.session = 1;
  router.answered(subagent, true);
  EXPECT_EQ(router.view(seconds(1)).task_tokens, 60'000) << "a subagent's report is not a task's end";
  router.answered(new_task(3, 44'000), true);
  EXPECT_EQ(router.view(seconds(1)).task_tokens, 59'000) << "a running mean: 60k + (44k - 60k) / 16";
}

TEST(TasksUnderWay, ATaskLivesOnItsMainThreadsReplicaUntilItsFinalTextOrSilence) {
  TasksUnderWay tasks;
  const RequestFacts start = new_task(1);
  tasks.routed(start, routed(2, Route::new_conversation), seconds(0));
  EXPECT_EQ(tasks.on(2), 1U);
  RequestFacts subagent = new_task(5);
  subagent.thread.session = 1;
  tasks.routed(subagent, routed(0, Route::new_conversation), seconds(1));
  EXPECT_EQ(tasks.on(0), 0U) << "a subagent belongs to its session's task";
  RequestFacts turn = start;
  turn.home = 2;
  tasks.routed(turn, routed(3, Route::spilled), seconds(2));
  EXPECT_EQ(tasks.on(2), 1U) << "a spilled request does not move its task";
  tasks.routed(turn, routed(3, Route::rehomed), seconds(3));
  EXPECT_EQ(tasks.on(2), 0U);
  EXPECT_EQ(tasks.on(3), 1U);
  tasks.answered(subagent, true);
  EXPECT_EQ(tasks.size(), 1U) << "a subagent's report does not end the task";
  tasks.answered(start, false);
  EXPECT_EQ(tasks.size(), 1U) << "tool calls: the task goes on";
  tasks.answered(start, true);
  EXPECT_EQ(tasks.size(), 0U);
  EXPECT_EQ(tasks.on(3), 0U);
  RequestFacts chat = new_task(9);
  chat.offers_tools = false;
  tasks.routed(chat, routed(1, Route::new_conversation), seconds(4));
  EXPECT_EQ(tasks.size(), 0U) << "a chat turn is no agent task";
  tasks.routed(new_task(2), routed(1, Route::new_conversation), seconds(10));
  tasks.expire(seconds(10) + minutes(5) - seconds(1), minutes(5));
  EXPECT_EQ(tasks.on(1), 1U);
  tasks.expire(seconds(10) + minutes(5), minutes(5));
  EXPECT_EQ(tasks.on(1), 1U) << "the tasks are walked at most every window / 16 (18.75 s here)";
  tasks.expire(seconds(10) + minutes(5) - seconds(1) + std::chrono::milliseconds(18'750), minutes(5));
  EXPECT_EQ(tasks.on(1), 0U) << "an agent silent for the window has stopped";
}

// A crowd of agents that fell silent together (a flood of sessions offering tools) ends over several
// calls, expire_budget per call at most, never in one request's walk over the whole table.
TEST(TasksUnderWay, SilentTasksEndAtMostTheBudgetPerCallUntilAllHaveEnded) {
  constexpr std::size_t budget = TasksUnderWay::expire_budget;
  constexpr std::size_t n = 3 * budget + 5;
  TasksUnderWay tasks;
  for (std::uint64_t s = 1; s <= n; ++s) {
    tasks.routed(new_task(s), routed(0, Route::new_conversation), seconds(0));
  }
  tasks.routed(new_task(n + 1), routed(1, Route::new_conversation), seconds(100));
  const auto silence = seconds(0) + minutes(5);
  std::size_t calls = 0;
  for (std::size_t before = tasks.size(); tasks.size() > 1; before = tasks.size()) {
    tasks.expire(silence + seconds(static_cast<std::int64_t>(calls)), minutes(5));
    ++calls;
    ASSERT_LE(before - tasks.size(), budget);
    ASSERT_LE(calls, 10U);
  }
  EXPECT_EQ(calls, 4U) << "3 x the budget and 5 more, each call going on with the same walk";
  EXPECT_EQ(tasks.on(0), 0U);
  EXPECT_EQ(tasks.on(1), 1U) << "a task heard from since stays";
  EXPECT_EQ(tasks.of_tenant(0), 1U);
}

// Bounded: past max_tasks, the least recently seen task ends to make room.
TEST(TasksUnderWay, PastItsBoundTheLeastRecentlySeenTaskEnds) {
  TasksUnderWay tasks(3);
  for (std::uint64_t s = 1; s <= 3; ++s) {
    tasks.routed(new_task(s), routed(static_cast<ReplicaIndex>(s), Route::new_conversation),
                 seconds(static_cast<std::int64_t>(s)));
  }
  tasks.routed(new_task(1), routed(1, Route::sticky), seconds(4));  // task 1 heard from again
  tasks.routed(new_task(4), routed(0, Route::new_conversation), seconds(5));
  EXPECT_EQ(tasks.size(), 3U);
  EXPECT_EQ(tasks.on(2), 0U) << "task 2 was the least recently seen";
  EXPECT_FALSE(tasks.under_way(new_task(2)));
  EXPECT_TRUE(tasks.under_way(new_task(1)));
  EXPECT_EQ(tasks.on(0) + tasks.on(1) + tasks.on(3), 3U);
}

TEST(TasksUnderWay, ATasksContextIsItsMainThreadsLastPrompt) {
  TasksUnderWay tasks;
  RequestFacts turn = new_task(1, 14'000);
  tasks.routed(turn, routed(0, Route::new_conversation), seconds(0));
  tasks.routed(new_task(2, 5'000), routed(0, Route::new_conversation), seconds(0));
  EXPECT_EQ(tasks.tokens_on(0), 19'000U);
  EXPECT_TRUE(tasks.under_way(turn));
  turn.home = 0;
  turn.prompt_tokens = 20'000;
  tasks.routed(turn, routed(1, Route::spilled), seconds(1));
  EXPECT_EQ(tasks.tokens_on(0), 25'000U) << "a spilled request grows its task at home";
  RequestFacts subagent = new_task(5, 50'000);
  subagent.thread.session = 1;
  tasks.routed(subagent, routed(0, Route::new_conversation), seconds(1));
  EXPECT_EQ(tasks.tokens_on(0), 25'000U) << "a subagent's context is not its task's main thread";
  EXPECT_TRUE(tasks.under_way(subagent)) << "its session's task is under way";
  turn.prompt_tokens = 31'000;
  tasks.routed(turn, routed(1, Route::rehomed), seconds(2));
  EXPECT_EQ(tasks.tokens_on(0), 5'000U);
  EXPECT_EQ(tasks.tokens_on(1), 31'000U);
  tasks.answered(turn, true);
  EXPECT_EQ(tasks.tokens_on(1), 0U);
  EXPECT_FALSE(tasks.under_way(turn));
  ReplicaRemap remap;
  remap.to = {1, 0};
  remap.new_count = 2;
  tasks.remap(remap);
  EXPECT_EQ(tasks.tokens_on(1), 5'000U) << "a reload moves a task's context with its replica";
}

// Through the Router: it tells a session's next task from one under way, and holds the next task while its
// home's tasks and its own context would overflow the home, until a task there ends.
TEST(TaskAdmission, TheRouterHoldsASessionsNextTaskUntilATaskAtItsHomeEnds) {
  Router router = made_router(router_config(RoutingConfig{.max_num_seqs = 4}));
  std::vector<ReplicaMetrics> metrics(1);
  metrics[0].kv_capacity_tokens = kCapacity;
  SplitMixRng rng{3};
  ASSERT_TRUE(router.route(new_task(1, 14'000), metrics, seconds(0), rng).ok());
  router.answered(new_task(1, 30'000), /*final_text=*/true);
  ASSERT_TRUE(router.route(new_task(2, 90'000), metrics, seconds(2), rng).ok());
  ASSERT_TRUE(router.route(new_task(3, 60'000), metrics, seconds(3), rng).ok());
  EXPECT_EQ(router.snapshot(metrics, seconds(3)).replicas[0].tasks_tokens, 150'000U);
  RequestFacts next = new_task(1, 32'000);
  next.task_start = true;
  EXPECT_TRUE(router.route(next, metrics, seconds(4), rng).queued()) << "182k past 168k";
  EXPECT_TRUE(router.route(new_task(2, 92'000), metrics, seconds(5), rng).ok()) << "a task under way";
  router.answered(new_task(2, 94'000), /*final_text=*/true);
  const Decision placed = router.route(next, metrics, seconds(6), rng);
  EXPECT_EQ(placed.replica, std::optional<ReplicaIndex>(0));
  EXPECT_EQ(placed.route, Route::sticky);
}

TEST(TasksUnderWay, AReloadMovesTasksWithTheirReplicaAndEndsThoseOfARemovedOne) {
  TasksUnderWay tasks;
  tasks.routed(new_task(1), routed(0, Route::new_conversation), seconds(0));
  tasks.routed(new_task(2), routed(1, Route::new_conversation), seconds(0));
  ReplicaRemap remap;
  remap.to = {std::nullopt, 0};
  remap.new_count = 1;
  tasks.remap(remap);
  EXPECT_EQ(tasks.size(), 1U);
  EXPECT_EQ(tasks.on(0), 1U);
}

TEST(TaskAdmission, TheLongestHoldIsTheLongerBoundOfTheRulesInForce) {
  RoutingConfig r;
  EXPECT_EQ(longest_hold(r, false), minutes(8));
  EXPECT_EQ(longest_hold(r, true), TaskAdmission::auto_stream_max_wait)
      << "by default (auto) the stream bound may reach its long bound";
  r.task_admission.stream_max_wait = minutes(30);
  EXPECT_EQ(longest_hold(r, true), minutes(30)) << "a start kept alive: the stream bound";
  r.task_admission.enabled = false;
  EXPECT_EQ(longest_hold(r, false), r.admission.max_wait);
  EXPECT_EQ(longest_hold(r, true), r.admission.max_wait);
  r.task_admission.enabled = true;
  r.admission.max_wait = minutes(20);
  EXPECT_EQ(longest_hold(r, false), minutes(20));
  EXPECT_EQ(longest_hold(r, true), minutes(30));
  r.task_admission.stream_max_wait = minutes(5);
  EXPECT_EQ(longest_hold(r, true), minutes(20)) << "the longer of the rules in force";
}

// A streaming request whose response the warden keeps alive while it is held has no client timeout to
// beat: its start is held past max_wait, up to the operator's stream_max_wait.
TEST(TaskAdmission, AStartKeptAliveIsHeldPastMaxWaitUpToItsStreamBound) {
  ScriptedRng rng;
  Snapshot s = under_way({2, 2, 2});
  s.routing.task_admission.stream_max_wait = minutes(30);
  RequestFacts kept = new_task();
  kept.kept_alive = true;
  kept.queued_for = minutes(8);
  EXPECT_EQ(task_max_wait(s, kept), minutes(30));
  EXPECT_TRUE(decide(s, kept, rng).queued()) << "8 min is the bound of a client that gives up at 10";
  kept.queued_for = minutes(29);
  EXPECT_TRUE(decide(s, kept, rng).queued());
  kept.queued_for = minutes(30);
  EXPECT_TRUE(decide(s, kept, rng).ok()) << "placed as usual at its stream bound";
  RequestFacts plain = new_task();
  plain.queued_for = minutes(8);
  EXPECT_TRUE(decide(s, plain, rng).ok()) << "not kept alive: max_wait";
  s.routing.task_admission.stream_max_wait = minutes(2);
  kept.queued_for = minutes(2);
  EXPECT_TRUE(decide(s, kept, rng).ok()) << "the operator's bound, shorter or longer";
}

// auto: a start kept alive waits the long bound only where every replica keeps about two tasks warm (1.75);
// where one keeps less, holding longer idles its GPU (the reference host with agents): max_wait's bound.
// Holding a start pays where the caches keep enough tasks to keep the engines busy; where a replica keeps
// fewer than about two (the reference host, a task 22k tokens of a 34-43k cache), a held start idles its
// replica longer than a miss costs, and task admission holds nothing: a start that finds no room goes as
// with it off.
TEST(TaskAdmission, HoldsNothingWhereAReplicaKeepsFewerThanTwoTasksWarm) {
  ScriptedRng rng;
  Snapshot s = under_way({2, 2});
  for (ReplicaState& r : s.replicas) {
    r.kv_capacity_tokens = static_cast<std::uint64_t>(1.75 * s.task_tokens);
  }
  RequestFacts next = new_task(1, 30'000);
  next.home = 0;
  next.task_start = true;
  s.replicas[0].tasks_tokens = s.replicas[1].tasks_tokens = 90'000;
  EXPECT_TRUE(decide(s, new_task(), rng).queued()) << "1.75 tasks warm a replica: a new task waits";
  EXPECT_TRUE(decide(s, next, rng).queued()) << "and a next task without room";
  s.replicas[0].kv_capacity_tokens -= 1;
  EXPECT_TRUE(decide(s, new_task(), rng).ok()) << "one replica keeps fewer: nothing held";
  EXPECT_EQ(decide(s, next, rng), routed(0, Route::sticky)) << "the next task stays home, as with it off";
}

TEST(TaskAdmission, AutoHoldsAStartKeptAliveLongOnlyWhereEveryReplicaKeepsTwoTasksWarm) {
  ScriptedRng rng;
  Snapshot s = under_way({2, 2, 2});
  ASSERT_FALSE(s.routing.task_admission.stream_max_wait) << "auto is the default";
  for (ReplicaState& r : s.replicas) {
    r.kv_capacity_tokens = static_cast<std::uint64_t>(1.75 * s.task_tokens);
  }
  RequestFacts kept = new_task();
  kept.kept_alive = true;
  kept.queued_for = minutes(8);
  EXPECT_TRUE(keeps_two_tasks_warm(s));
  EXPECT_EQ(task_max_wait(s, kept), TaskAdmission::auto_stream_max_wait);
  EXPECT_TRUE(decide(s, kept, rng).queued()) << "1.75 tasks warm a replica: held past max_wait";
  s.replicas[1].kv_capacity_tokens -= 1;
  EXPECT_FALSE(keeps_two_tasks_warm(s));
  EXPECT_EQ(task_max_wait(s, kept), s.routing.task_admission.max_wait);
  EXPECT_TRUE(decide(s, kept, rng).ok()) << "one replica keeps less than 1.75 tasks: max_wait's bound";
  s.replicas[1].healthy = false;
  EXPECT_TRUE(keeps_two_tasks_warm(s)) << "an unhealthy replica takes no task";
  s.task_tokens = 0;
  EXPECT_TRUE(keeps_two_tasks_warm(s)) << "no task has ended: a task is assumed a share of the cache";
  EXPECT_TRUE(decide(s, kept, rng).queued());
  RequestFacts plain = new_task();
  plain.queued_for = minutes(8);
  s.task_tokens = kTask;
  EXPECT_EQ(task_max_wait(s, plain), s.routing.task_admission.max_wait) << "not kept alive: max_wait";
}

TEST(TaskAdmission, ASessionsNextTaskKeptAliveIsHeldUpToItsStreamBound) {
  ScriptedRng rng;
  Snapshot s = under_way({2});
  s.routing.task_admission.stream_max_wait = minutes(30);
  s.replicas[0].tasks_tokens = 150'000;
  RequestFacts next = new_task(1, 30'000);
  next.home = 0;
  next.task_start = true;
  next.kept_alive = true;
  next.queued_for = minutes(8);
  EXPECT_TRUE(decide(s, next, rng).queued());
  next.queued_for = minutes(30);
  EXPECT_EQ(decide(s, next, rng), routed(0, Route::sticky));
}

}  // namespace
}  // namespace warden::core
