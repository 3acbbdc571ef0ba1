// Classes of work and tenants in the routing core: an interactive task start is never held by task
// admission; a task counts against its tenant; an abandoned start is no task under way; the hold queue lets
// held requests out interactive first, then by fair share between tenants, then between sessions.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/decide.hpp"
#include "core/helpers.hpp"
#include "core/hold_queue.hpp"
#include "core/task_admission.hpp"
#include "core/tasks_under_way.hpp"

namespace warden::core {
namespace {

using std::chrono::seconds;
using testing::idle_snapshot;
using testing::routed;

constexpr std::uint64_t kCapacity = 167'776;

RequestFacts task_start(std::uint64_t session, std::uint64_t tenant = 0,
                        WorkClass work_class = WorkClass::headless) {
  RequestFacts f = testing::new_conversation(session, 14'000);
  f.thread.session = session;
  f.offers_tools = true;
  f.tenant = tenant;
  f.work_class = work_class;
  return f;
}

// One replica of kCapacity tokens with `tasks` of 58k tokens under way: no room for one more.
Snapshot full(std::uint32_t tasks = 2) {
  Snapshot s = idle_snapshot(1, 4);
  s.task_tokens = 58'000;
  s.replicas[0].kv_capacity_tokens = kCapacity;
  s.replicas[0].tasks_under_way = tasks;
  s.replicas[0].active_conversations = tasks;
  return s;
}

TEST(WorkClasses, TaskAdmissionNeverHoldsAnInteractiveTaskStart) {
  ScriptedRng rng;
  const Snapshot s = full();
  EXPECT_TRUE(decide(s, task_start(1), rng).queued()) << "a headless start waits for room";
  EXPECT_EQ(decide(s, task_start(2, 0, WorkClass::interactive), rng), routed(0, Route::new_conversation))
      << "a person's start goes now, over the room";
  RequestFacts next = task_start(3, 0, WorkClass::interactive);
  next.home = 0;
  next.task_start = true;
  Snapshot crowded = full();
  crowded.replicas[0].tasks_tokens = 160'000;
  EXPECT_EQ(decide(crowded, next, rng), routed(0, Route::sticky)) << "nor its session's next task";
  next.work_class = WorkClass::headless;
  EXPECT_TRUE(decide(crowded, next, rng).queued());
}

TEST(Tenants, ATaskCountsAgainstItsTenantUntilItEnds) {
  TasksUnderWay tasks;
  tasks.routed(task_start(1, 10), routed(0, Route::new_conversation), seconds(0));
  tasks.routed(task_start(2, 10), routed(0, Route::new_conversation), seconds(0));
  tasks.routed(task_start(3, 20), routed(0, Route::new_conversation), seconds(0));
  EXPECT_EQ(tasks.of_tenant(10), 2U);
  EXPECT_EQ(tasks.of_tenant(20), 1U);
  EXPECT_EQ(tasks.of_tenant(30), 0U);
  tasks.answered(task_start(1, 10), true);
  EXPECT_EQ(tasks.of_tenant(10), 1U);
  tasks.expire(seconds(600), seconds(300));
  EXPECT_EQ(tasks.of_tenant(10), 0U);
  EXPECT_EQ(tasks.of_tenant(20), 0U);
}

TEST(Tenants, AStartTheClientLeftBeforeAnyAnswerIsNoTaskUnderWay) {
  TasksUnderWay tasks;
  const RequestFacts start = task_start(1, 10);
  tasks.routed(start, routed(0, Route::new_conversation), seconds(0));
  tasks.left_unanswered(start);
  EXPECT_EQ(tasks.size(), 0U);
  EXPECT_EQ(tasks.on(0), 0U);
  EXPECT_EQ(tasks.of_tenant(10), 0U);
  tasks.routed(start, routed(0, Route::new_conversation), seconds(1));
  tasks.answered(start, false);  // a tool call: the task is under way
  RequestFacts round = start;
  round.home = 0;
  tasks.routed(round, routed(0, Route::sticky), seconds(2));
  tasks.left_unanswered(round);
  EXPECT_EQ(tasks.of_tenant(10), 1U) << "a task once answered stays under way when one round is left";
}

// Lets the requests in `room` go; remembers who was asked, in order.
struct Script {
  std::set<int> room;
  std::vector<int> asked;

  Retried operator()(const int& id, Time) {
    asked.push_back(id);
    return room.erase(id) > 0 ? Retried::went : Retried::held;
  }
};

HoldRules rules(bool every = false, std::size_t tenant_queue = 32) {
  return {.max_queue = 64,
          .longest = seconds(480),
          .admission_wait = seconds(30),
          .every_request = every,
          .tenant_queue = tenant_queue};
}

TEST(FairTurn, InteractiveRequestsGoBeforeHeadlessOnes) {
  HoldQueue<int> q(rules());
  ASSERT_TRUE(q.join(1, task_start(1), Time{seconds(0)}));
  ASSERT_TRUE(q.join(2, task_start(2), Time{seconds(1)}));
  ASSERT_TRUE(q.join(3, task_start(3, 0, WorkClass::interactive), Time{seconds(2)}));
  Script s{.room = {3, 1}};
  EXPECT_EQ(q.retry(Time{seconds(3)}, s), 2U);
  EXPECT_EQ(s.asked, (std::vector<int>{3, 1, 2}));
  EXPECT_EQ(q.deadline(), Time{seconds(481)}) << "the deadline stays the oldest's";
}

TEST(FairTurn, TheTenantWithTheLeastOfItsShareUsedGoesFirst) {
  HoldQueue<int> q(rules());
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(q.join(i, task_start(static_cast<std::uint64_t>(i), 10), Time{seconds(i)}));
  }
  ASSERT_TRUE(q.join(4, task_start(4, 20), Time{seconds(4)}));
  const auto under_way = [](std::uint64_t tenant) { return tenant == 10 ? 3.0 : 0.0; };
  Script s{.room = {4}};
  EXPECT_EQ(q.retry(Time{seconds(5)}, s, under_way), 1U);
  EXPECT_EQ(s.asked, (std::vector<int>{4, 1}))
      << "tenant 20 has nothing under way: it goes before 10's older";
  Script all{.room = {1, 2, 3}};
  q.retry(Time{seconds(6)}, all, under_way);
  EXPECT_EQ(all.asked, (std::vector<int>{1, 2, 3}));
}

TEST(FairTurn, LettingTenantsInAlternatesByTheirWeightedShare) {
  HoldQueue<int> q(rules(true));
  Time t{0};
  for (int i = 1; i <= 6; ++i) {  // tenant 10 (weight 2): 1-4; tenant 20 (weight 1): 5, 6, the latest
    RequestFacts f = task_start(static_cast<std::uint64_t>(i), i <= 4 ? 10 : 20);
    f.tenant_weight = i <= 4 ? 2 : 1;
    ASSERT_TRUE(q.join(i, f, t += seconds(1)));
  }
  Script s{.room = {1, 2, 3, 4, 5, 6}};
  q.retry(t, s);
  EXPECT_EQ(s.asked, (std::vector<int>{1, 5, 2, 3, 6, 4}))
      << "shares 0 = 0 (the older first), 1/2 > 0, 1/2 < 1, 2/2 = 1 (the older), 3/2 > 1, the rest";
}

TEST(FairTurn, WithinATenantEachSessionsOldestGoesBeforeAnySessionsSecond) {
  for (const std::uint64_t tenant : {std::uint64_t{10}, std::uint64_t{0}}) {
    HoldQueue<int> q(rules());
    ASSERT_TRUE(q.join(1, task_start(7, tenant), Time{seconds(0)}));
    RequestFacts thread = testing::new_conversation(70);  // a new subagent of session 7, held behind
    thread.thread.session = 7;
    thread.tenant = tenant;
    ASSERT_TRUE(q.join(2, thread, Time{seconds(1)}));
    ASSERT_TRUE(q.join(3, task_start(8, tenant), Time{seconds(2)}));
    Script s{.room = {1, 2, 3}};
    q.retry(Time{seconds(3)}, s);
    EXPECT_EQ(s.asked, tenant != 0 ? std::vector<int>({1, 3, 2}) : std::vector<int>({1, 2, 3}))
        << "a named tenant's sessions take turns; the requests naming none keep their order of arrival";
  }
}

TEST(FairTurn, ARequestAtItsDeadlineComesFirstInTheTurn) {
  HoldQueue<int> q(rules());
  ASSERT_TRUE(q.join(1, task_start(1, 10), Time{seconds(0)}));
  ASSERT_TRUE(q.join(2, task_start(2, 20), Time{seconds(10)}));
  const auto under_way = [](std::uint64_t tenant) { return tenant == 10 ? 3.0 : 0.0; };
  Script s;
  q.retry(Time{seconds(479)}, s, under_way);
  EXPECT_EQ(s.asked, (std::vector<int>{2})) << "20 before 10 while neither waited the longest hold";
  ASSERT_EQ(q.deadline(), Time{seconds(480)});
  Script at_deadline{.room = {1}};
  EXPECT_EQ(q.retry(Time{seconds(480)}, at_deadline, under_way), 1U);
  EXPECT_EQ(at_deadline.asked, (std::vector<int>{1, 2}))
      << "the oldest, at its deadline, is not held behind 2";
}

TEST(FairTurn, OneTenantOneClassIsFirstComeFirstServed) {
  HoldQueue<int> q(rules());
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(q.join(i, task_start(static_cast<std::uint64_t>(i), 10), Time{seconds(i)}));
  }
  Script s{.room = {1, 2, 4}};
  EXPECT_EQ(q.retry(Time{seconds(9)}, s, [](std::uint64_t) { return 4; }), 2U);
  EXPECT_EQ(s.asked, (std::vector<int>{1, 2, 3}));
}

TEST(FairTurn, ATenantHoldsAtMostItsCapAndTheOthersStillJoin) {
  HoldQueue<int> q(rules(false, 2));
  EXPECT_TRUE(q.join(1, task_start(1, 10), Time{0}));
  EXPECT_TRUE(q.join(2, task_start(2, 10), Time{0}));
  EXPECT_FALSE(q.join(3, task_start(3, 10), Time{0})) << "tenant 10 holds its cap";
  EXPECT_TRUE(q.join(4, task_start(4, 20), Time{0}));
  EXPECT_EQ(q.held_of(10), 2U);
  EXPECT_TRUE(q.join(5, task_start(5), Time{0}));
  EXPECT_TRUE(q.join(6, task_start(6), Time{0})) << "requests that name no tenant are one fleet, uncapped";
  EXPECT_TRUE(q.join(7, task_start(7), Time{0}));
  RoutingConfig r;
  EXPECT_EQ(hold_rules(r).tenant_queue, 32U) << "auto: half of max_queue 64";
  r.admission.tenant_queue = 5;
  EXPECT_EQ(hold_rules(r).tenant_queue, 5U);
}

// The probe's attack on the queue: room for one task, tenant A with three tasks under way floods held
// starts (its client leaving and sending them again); tenant B's new start goes next and is never refused.
TEST(FairTurn, AFloodingTenantNeitherDelaysNorShutsOutAnotherTenantsStart) {
  HoldQueue<int> q(hold_rules(RoutingConfig{}));
  TasksUnderWay tasks;
  for (std::uint64_t a = 1; a <= 3; ++a) {
    tasks.routed(task_start(a, 10), routed(0, Route::new_conversation), seconds(0));
  }
  for (int second = 0; second < 40; ++second) {
    // Each second a start of A's is let in and its client leaves before any answer...
    const RequestFacts left = task_start(static_cast<std::uint64_t>(1000 + second), 10);
    tasks.routed(left, routed(0, Route::new_conversation), seconds(second));
    tasks.left_unanswered(left);
    // ... and another joins the held ones (past its cap, refused).
    const int held = 100 + second;
    EXPECT_EQ(q.join(held, task_start(static_cast<std::uint64_t>(held), 10), Time{seconds(second)}),
              second < 32);
  }
  EXPECT_EQ(tasks.of_tenant(10), 3U) << "abandoned starts are no tasks under way";
  ASSERT_TRUE(q.join(1, task_start(999, 20), Time{seconds(41)})) << "B is never refused";
  const auto under_way = [&](std::uint64_t tenant) { return tasks.of_tenant(tenant); };
  Script s{.room = {1}};
  EXPECT_EQ(q.retry(Time{seconds(42)}, s, under_way), 1U);  // room for one task
  EXPECT_EQ(s.asked.front(), 1) << "B's start goes next";
}

}  // namespace
}  // namespace warden::core
