// The room of a person's task: an interactive task that ended keeps its room on its replica while its
// person reads (TaskAdmission::interactive_room), so the next task, never held, goes into it and a headless
// start waits instead; a person's new conversation takes the room over.
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

using std::chrono::minutes;
using std::chrono::seconds;
using testing::routed;

constexpr std::uint64_t kCapacity = 167'776;  // one RTX 5090's pool of a 27B hybrid model (107 x 1,568)

RequestFacts task_request(std::uint64_t session, std::uint32_t prompt, WorkClass work_class,
                          std::uint64_t tenant = 0) {
  RequestFacts f = testing::new_conversation(session, prompt);
  f.thread.session = session;
  f.offers_tools = true;
  f.work_class = work_class;
  f.tenant = tenant;
  return f;
}

TEST(InteractiveRoom, RoomsKeptAreBoundedTheOldestEndsFirst) {
  // Clients that call themselves interactive cannot grow the rooms kept without bound: past max_kept, the
  // room kept longest ends (it no longer counts on its replica, nor against its tenant). One person each
  // (a person's new conversation takes over its own last room).
  TasksUnderWay tasks;
  const std::size_t n = TasksUnderWay::max_kept + 1;
  for (std::size_t s = 1; s <= n; ++s) {
    const RequestFacts person = task_request(s, 1'000, WorkClass::interactive, /*tenant=*/s);
    tasks.routed(person, routed(static_cast<ReplicaIndex>(s == 1 ? 1 : 0), Route::new_conversation),
                 seconds(static_cast<long>(s)));
    tasks.answered(person, true, true);
  }
  EXPECT_EQ(tasks.on(1), 0U) << "the first room kept ended when the 4,097th was kept";
  EXPECT_FALSE(tasks.room_kept(task_request(1, 1'000, WorkClass::interactive, 1)));
  EXPECT_EQ(tasks.of_tenant(1), 0U);
  EXPECT_EQ(tasks.on(0), TasksUnderWay::max_kept) << "each other person's room still kept";
}

TEST(InteractiveRoom, ARoomKeptAgainIsTimedFromItsLatestRequest) {
  // A session whose room is kept, taken by its next task and kept again, is ended by the bound counted from
  // its latest request, not by its first keeping's place in line.
  TasksUnderWay tasks;
  const RequestFacts person = task_request(1, 10'000, WorkClass::interactive);
  tasks.routed(person, routed(0, Route::new_conversation), seconds(0));
  tasks.answered(person, true, true);
  tasks.routed(person, routed(0, Route::sticky), seconds(100));
  tasks.answered(person, true, true);
  tasks.expire(seconds(130), minutes(5), minutes(2));
  EXPECT_TRUE(tasks.room_kept(person)) << "2 minutes after its first request, but not after its latest";
  tasks.expire(seconds(220), minutes(5), minutes(2));
  EXPECT_FALSE(tasks.room_kept(person));
  EXPECT_EQ(tasks.on(0), 0U);
}

TEST(InteractiveRoom, AnInteractiveTasksEndKeepsItsRoomUntilItsNextTaskOrTheBound) {
  TasksUnderWay tasks;
  const RequestFacts person = task_request(1, 30'000, WorkClass::interactive, 5);
  tasks.routed(person, routed(0, Route::new_conversation), seconds(0));
  tasks.answered(person, /*final_text=*/true, /*keep_room=*/true);
  EXPECT_EQ(tasks.on(0), 1U) << "the room still counts on its replica";
  EXPECT_EQ(tasks.tokens_on(0), 30'000U);
  EXPECT_EQ(tasks.of_tenant(5), 1U);
  EXPECT_FALSE(tasks.under_way(person)) << "its next request starts a task";
  EXPECT_TRUE(tasks.room_kept(person));
  RequestFacts next = person;
  next.home = 0;
  next.prompt_tokens = 34'000;
  tasks.routed(next, routed(0, Route::sticky), seconds(50));
  EXPECT_TRUE(tasks.under_way(next)) << "the next task took the room";
  EXPECT_FALSE(tasks.room_kept(next));
  EXPECT_EQ(tasks.on(0), 1U);
  EXPECT_EQ(tasks.tokens_on(0), 34'000U);
  EXPECT_EQ(tasks.first_prompt(next), std::optional<std::uint32_t>(34'000)) << "a task of its own";
  tasks.answered(next, true, true);
  tasks.expire(seconds(50) + minutes(2) - seconds(1), minutes(5), minutes(2));
  EXPECT_EQ(tasks.on(0), 1U);
  tasks.expire(seconds(50) + minutes(2), minutes(5), minutes(2));
  EXPECT_EQ(tasks.on(0), 0U) << "the person stayed away 2 minutes after its last request: the room goes";
  EXPECT_EQ(tasks.of_tenant(5), 0U);
}

TEST(InteractiveRoom, AHeadlessTasksEndOrNoBoundFreesItsRoomAtOnce) {
  TasksUnderWay tasks;
  const RequestFacts agent = task_request(1, 30'000, WorkClass::headless);
  tasks.routed(agent, routed(0, Route::new_conversation), seconds(0));
  tasks.answered(agent, true, true);
  EXPECT_EQ(tasks.on(0), 0U) << "nobody reads a headless task's answer";
  const RequestFacts person = task_request(2, 30'000, WorkClass::interactive);
  tasks.routed(person, routed(0, Route::new_conversation), seconds(0));
  tasks.answered(person, true, /*keep_room=*/false);
  EXPECT_EQ(tasks.on(0), 0U);
  EXPECT_FALSE(tasks.room_kept(person));
}

TEST(InteractiveRoom, APersonsNewConversationTakesOverItsTenantsKeptRoom) {
  TasksUnderWay tasks;
  const RequestFacts person = task_request(1, 60'000, WorkClass::interactive, 5);
  tasks.routed(person, routed(2, Route::new_conversation), seconds(0));
  tasks.answered(person, true, true);
  EXPECT_EQ(tasks.kept_room_of(5), std::optional<ReplicaIndex>(2));
  EXPECT_EQ(tasks.kept_room_of(6), std::nullopt) << "another tenant's person has no room kept";
  tasks.routed(task_request(9, 15'000, WorkClass::interactive, 6), routed(2, Route::new_conversation),
               seconds(5));
  EXPECT_EQ(tasks.on(2), 2U) << "another tenant's new task does not take it";
  tasks.routed(task_request(8, 15'000, WorkClass::interactive, 5), routed(2, Route::new_conversation),
               seconds(6));
  EXPECT_EQ(tasks.on(2), 2U) << "the kept room became the new conversation's task";
  EXPECT_EQ(tasks.tokens_on(2), 30'000U);
  EXPECT_FALSE(tasks.room_kept(person));
  EXPECT_EQ(tasks.kept_room_of(5), std::nullopt);
}

// decide(): a kept room is its own session's (the next task stays home though the home is full) or its
// tenant's new conversation's (it goes there); anyone else's start sees a full replica.
TEST(InteractiveRoom, ADecisionPlacesAPersonsTaskInItsKeptRoom) {
  ScriptedRng rng;
  Snapshot s = testing::idle_snapshot(2, 4);
  s.task_tokens = 58'000;
  for (ReplicaState& r : s.replicas) {
    r.kv_capacity_tokens = kCapacity;
    r.tasks_under_way = 2;
    r.tasks_tokens = 150'000;
  }
  s.replicas[1].tasks_tokens = 60'000;
  RequestFacts next = task_request(1, 40'000, WorkClass::interactive);
  next.home = 0;
  next.task_start = true;
  EXPECT_EQ(decide(s, next, rng), routed(1, Route::rehomed)) << "no room kept: it moves where there is room";
  next.room_kept = true;
  EXPECT_EQ(decide(s, next, rng), routed(0, Route::sticky)) << "its room at home is its own";
  RequestFacts fresh = task_request(2, 15'000, WorkClass::interactive);
  fresh.kept_room_at = 1;
  EXPECT_EQ(decide(s, fresh, rng), routed(1, Route::new_conversation));
  EXPECT_TRUE(decide(s, task_request(3, 15'000, WorkClass::headless), rng).queued());
}

// Through the Router: one replica with room for two tasks. While a person reads, a headless start waits
// for the room the person's next task goes into; with `interactive_room: 0` it takes it.
TEST(InteractiveRoom, TheRouterHoldsAHeadlessStartWhileAPersonReads) {
  for (const Time room : {Time{minutes(2)}, Time{0}}) {
    RoutingConfig routing{.max_num_seqs = 4};
    routing.task_admission.interactive_room = room;
    Router router = made_router(router_config(routing));
    std::vector<ReplicaMetrics> metrics(1);
    metrics[0].kv_capacity_tokens = kCapacity;
    SplitMixRng rng{3};
    // A task ends first, so tasks are measured (58k): one replica keeps two warm.
    ASSERT_TRUE(router.route(task_request(9, 14'000, WorkClass::headless), metrics, seconds(0), rng).ok());
    router.answered(task_request(9, 58'000, WorkClass::headless), true);
    ASSERT_TRUE(router.route(task_request(1, 14'000, WorkClass::headless), metrics, seconds(1), rng).ok());
    const RequestFacts person = task_request(2, 14'000, WorkClass::interactive);
    ASSERT_TRUE(router.route(person, metrics, seconds(2), rng).ok());
    router.answered(task_request(2, 40'000, WorkClass::interactive), true);
    const Decision start =
        router.route(task_request(3, 14'000, WorkClass::headless), metrics, seconds(30), rng);
    EXPECT_EQ(start.queued(), room > Time{0}) << "a person reads: its room is kept";
    RequestFacts next = task_request(2, 41'000, WorkClass::interactive);
    next.task_start = true;
    const Decision went = router.route(next, metrics, seconds(60), rng);
    EXPECT_EQ(went.replica, std::optional<ReplicaIndex>(0));
    EXPECT_EQ(went.route, Route::sticky);
  }
}

}  // namespace
}  // namespace warden::core
