// The hold queue's rules through scripted inputs: first come first served (a round stops at the first
// request still held, or asks every one under hold_task_starts), a request that could be held waits behind
// the held ones, the bound on its length, each request's deadline at its longest hold (kept alive or not),
// each request's wait, Retry-After by the rule that holds it, leaving, stopping.
#include "core/hold_queue.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/helpers.hpp"

namespace warden::core {
namespace {

using std::chrono::seconds;

// Lets the requests in `room` go (each once), holds the others; remembers who it was asked about, in order,
// and the wait each had.
struct Script {
  std::set<int> room;
  std::vector<int> asked;
  std::vector<Time> waits;

  Retried operator()(const int& id, Time waited) {
    asked.push_back(id);
    waits.push_back(waited);
    return room.erase(id) > 0 ? Retried::went : Retried::held;
  }
};

RequestFacts facts_of(std::uint64_t session) {
  return testing::new_conversation(session);
}

// The first request of a new agent task: a new session's main thread, tools offered.
RequestFacts task_start(std::uint64_t session) {
  RequestFacts f = facts_of(session);
  f.offers_tools = true;
  return f;
}

// The first request of a new agent task whose client's wait the warden keeps alive.
RequestFacts kept_alive_start(std::uint64_t session) {
  RequestFacts f = task_start(session);
  f.kept_alive = true;
  return f;
}

HoldRules rules(std::size_t max_queue = 3, bool every_request = false) {
  return {.max_queue = max_queue,
          .longest = seconds(60),
          .admission_wait = seconds(30),
          .every_request = every_request};
}

// rules() with the bound of a request kept alive.
HoldRules rules_kept_alive(Time longest) {
  HoldRules r = rules();
  r.kept_alive_longest = longest;
  return r;
}

HoldQueue<int> queue_of(std::initializer_list<int> ids, HoldRules r = rules()) {
  HoldQueue<int> q(r);
  Time t{0};
  for (const int id : ids) {
    EXPECT_TRUE(q.join(id, facts_of(static_cast<std::uint64_t>(id)), t));
    t += seconds(1);
  }
  return q;
}

TEST(HoldQueue, ARoundGoesInOrderAndStopsAtTheFirstRequestStillHeld) {
  HoldQueue<int> q = queue_of({1, 2, 3});
  Script s{.room = {1, 3}};
  EXPECT_EQ(q.retry(Time{seconds(10)}, s), 1u);
  EXPECT_EQ(s.asked, (std::vector<int>{1, 2})) << "3, behind the held 2, is not even asked";
  EXPECT_EQ(q.size(), 2u);
  s.room = {2, 3};
  EXPECT_EQ(q.retry(Time{seconds(11)}, s), 2u);
  EXPECT_EQ(s.asked, (std::vector<int>{1, 2, 2, 3}));
  EXPECT_TRUE(q.empty());
}

TEST(HoldQueue, UnderHoldTaskStartsARoundAsksEveryHeldRequestAndKeepsTheOrderOfTheRest) {
  HoldQueue<int> q = queue_of({1, 2, 3, 4}, rules(8, true));
  Script s{.room = {2, 4}};
  EXPECT_EQ(q.retry(Time{seconds(10)}, s), 2u);
  EXPECT_EQ(s.asked, (std::vector<int>{1, 2, 3, 4}));
  s = Script{.room = {1, 3}};
  EXPECT_EQ(q.retry(Time{seconds(11)}, s), 2u);
  EXPECT_EQ(s.asked, (std::vector<int>{1, 3})) << "1 and 3 stayed, in their order";
}

TEST(HoldQueue, ARoundAsksEveryRequestOnlyWhenAdmissionHoldsTaskStarts) {
  RoutingConfig r;
  r.admission = {.enabled = true, .max_queue = 5, .max_wait = seconds(20)};
  EXPECT_FALSE(hold_rules(r).every_request);
  r.admission.hold_task_starts = true;
  EXPECT_TRUE(hold_rules(r).every_request);
  r.admission.enabled = false;
  EXPECT_FALSE(hold_rules(r).every_request) << "admission off holds no task start";
  EXPECT_EQ(hold_rules(r).max_queue, 5u);
}

TEST(HoldQueue, ACallerThatFailsEndsTheRoundAndTheRequestStays) {
  for (const bool every : {false, true}) {
    HoldQueue<int> q = queue_of({1, 2, 3}, rules(3, every));
    std::vector<int> asked;
    const auto fail_at_2 = [&](const int& id, Time) {
      asked.push_back(id);
      return id == 2 ? Retried::stop : Retried::held;
    };
    EXPECT_EQ(q.retry(Time{seconds(10)}, fail_at_2), 0u);
    EXPECT_EQ(asked, every ? std::vector<int>({1, 2}) : std::vector<int>({1}));
    EXPECT_EQ(q.size(), 3u);
    Script s{.room = {1, 2, 3}};
    q.retry(Time{seconds(11)}, s);
    EXPECT_EQ(s.asked, (std::vector<int>{1, 2, 3})) << "the order survives";
  }
}

TEST(HoldQueue, EachRequestIsRoutedAgainWithTheTimeItHasWaited) {
  HoldQueue<int> q = queue_of({1, 2});  // joined at 0 s and 1 s
  Script s{.room = {1, 2}};
  q.retry(Time{seconds(5)}, s);
  EXPECT_EQ(s.waits, (std::vector<Time>{seconds(5), seconds(4)}));
}

TEST(HoldQueue, BeyondMaxQueueARequestIsRefusedAtOnce) {
  HoldQueue<int> q = queue_of({1, 2, 3});
  EXPECT_FALSE(q.join(4, facts_of(4), Time{seconds(3)}));
  EXPECT_EQ(q.size(), 3u);
  Script s{.room = {1}};
  q.retry(Time{seconds(4)}, s);
  EXPECT_TRUE(q.join(5, facts_of(5), Time{seconds(4)})) << "a place freed";
  HoldQueue<int> none(rules(0));
  EXPECT_FALSE(none.join(1, facts_of(1), Time{0})) << "max_queue 0 holds nobody";
}

TEST(HoldQueue, ARequestThatCouldBeHeldWaitsBehindTheHeldOnes) {
  HoldQueue<int> q(rules());
  EXPECT_FALSE(q.waits_behind(true)) << "nobody to wait behind";
  ASSERT_TRUE(q.join(1, facts_of(1), Time{0}));
  EXPECT_TRUE(q.waits_behind(true));
  EXPECT_FALSE(q.waits_behind(false)) << "a request admission never holds goes its way";
}

TEST(HoldQueue, TheHeadsDeadlineIsItsJoiningPlusTheLongestHold) {
  HoldQueue<int> q(rules());
  EXPECT_EQ(q.deadline(), std::nullopt);
  ASSERT_TRUE(q.join(1, facts_of(1), Time{seconds(10)}));
  ASSERT_TRUE(q.join(2, facts_of(2), Time{seconds(25)}));
  EXPECT_EQ(q.deadline(), Time{seconds(70)});
  Script s{.room = {1}};
  q.retry(Time{seconds(30)}, s);
  EXPECT_EQ(q.deadline(), Time{seconds(85)}) << "the next head's";
  q.configure({.max_queue = 3, .longest = seconds(5), .admission_wait = seconds(5)});
  EXPECT_EQ(q.deadline(), Time{seconds(30)}) << "a shorter wait applies to those waiting";
}

// A request whose client's wait is kept alive has a bound of its own: the queue's deadline is the earliest
// of its requests' (joining plus each one's longest hold), not its oldest one's.
TEST(HoldQueue, EachRequestsDeadlineIsItsJoiningPlusItsOwnLongestHold) {
  HoldRules r = rules_kept_alive(seconds(300));
  HoldQueue<int> q(r);
  ASSERT_TRUE(q.join(1, kept_alive_start(1), Time{seconds(0)}));
  EXPECT_EQ(q.deadline(), Time{seconds(300)});
  ASSERT_TRUE(q.join(2, task_start(2), Time{seconds(20)}));
  EXPECT_EQ(q.deadline(), Time{seconds(80)}) << "the younger one's bound is the shorter";
  ASSERT_TRUE(q.join(3, task_start(3), Time{seconds(30)}));
  EXPECT_FALSE(q.leave(1)) << "the oldest left, the earliest deadline stays";
  EXPECT_TRUE(q.leave(2));
  EXPECT_EQ(q.deadline(), Time{seconds(90)});
  r.kept_alive_longest = seconds(10);
  q.configure(r);
  ASSERT_TRUE(q.join(4, kept_alive_start(4), Time{seconds(40)}));
  EXPECT_EQ(q.deadline(), Time{seconds(50)});
}

// Past its own bound a request comes first in the turn; a request kept alive that waited longer but within
// its bound does not.
TEST(HoldQueue, ARequestDueByItsOwnBoundGoesFirstInTurn) {
  HoldQueue<int> q(rules_kept_alive(seconds(300)));
  ASSERT_TRUE(q.join(1, kept_alive_start(1), Time{seconds(0)}));
  ASSERT_TRUE(q.join(2, task_start(2), Time{seconds(5)}));
  Script s;
  q.retry(Time{seconds(30)}, s);
  EXPECT_EQ(s.asked, (std::vector<int>{1})) << "nobody due: the order of arrival";
  s = Script{};
  q.retry(Time{seconds(65)}, s);
  EXPECT_EQ(s.asked, (std::vector<int>{2})) << "2 waited its 60 s; 1, kept alive, is held up to 300 s";
  s = Script{.room = {1, 2}};
  q.retry(Time{seconds(300)}, s);
  EXPECT_EQ(s.asked, (std::vector<int>{1, 2})) << "both due: the oldest first";
}

TEST(HoldQueue, ModelSecondsRoundTheWaitToTheNanosecond) {
  HoldQueue<int, double> q(rules());
  ASSERT_TRUE(q.join(1, facts_of(1), 0.1));
  EXPECT_DOUBLE_EQ(*q.deadline(), 60.1);
  std::vector<Time> waits;
  q.retry(0.3, [&](const int&, Time w) {
    waits.push_back(w);
    return Retried::held;
  });
  EXPECT_EQ(waits, (std::vector<Time>{std::chrono::milliseconds(200)}));
}

TEST(HoldQueue, ARequestsLongestWaitIsTheOneOfTheRuleThatHoldsIt) {
  const HoldQueue<int> q(rules());
  EXPECT_EQ(q.max_wait(task_start(1)), seconds(60)) << "a new task: the longest hold";
  EXPECT_EQ(q.max_wait(facts_of(2)), seconds(30)) << "any other: admission's bound";
  const HoldQueue<int> short_longest({.max_queue = 3, .longest = seconds(10), .admission_wait = seconds(30)});
  EXPECT_EQ(short_longest.max_wait(facts_of(2)), seconds(10)) << "never beyond the head's deadline";
}

TEST(HoldQueue, ARetryAfterIsTheBoundOfARequestLikeIt) {
  const HoldQueue<int> q(rules_kept_alive(seconds(1800)));
  EXPECT_EQ(q.max_wait(kept_alive_start(1)), seconds(1800)) << "a new task kept alive: its stream bound";
  EXPECT_EQ(q.max_wait(task_start(2)), seconds(60)) << "one not kept alive: the longest hold";
  RequestFacts conversation = facts_of(3);
  conversation.kept_alive = true;
  EXPECT_EQ(q.max_wait(conversation), seconds(30)) << "a new conversation: admission's bound";
}

TEST(HoldQueue, TheRulesTakeTheStreamBoundOfTaskAdmission) {
  RoutingConfig r;
  EXPECT_EQ(hold_rules(r).longest, std::chrono::minutes(8));
  EXPECT_EQ(hold_rules(r).kept_alive_longest, TaskAdmission::auto_stream_max_wait)
      << "by default (auto) the long bound: routing lets a start go sooner where replicas keep less than two "
         "tasks warm";
  r.task_admission.stream_max_wait = std::chrono::minutes(45);
  EXPECT_EQ(hold_rules(r).kept_alive_longest, std::chrono::minutes(45));
  r.task_admission.enabled = false;
  EXPECT_EQ(hold_rules(r).kept_alive_longest, r.admission.max_wait) << "no task admission: admission's";
}

TEST(HoldQueue, CountsTheTaskStartsItHolds) {
  HoldQueue<int> q(rules());
  ASSERT_TRUE(q.join(1, task_start(1), Time{0}));
  ASSERT_TRUE(q.join(2, facts_of(2), Time{0}));
  ASSERT_TRUE(q.join(3, task_start(3), Time{0}));
  EXPECT_EQ(q.task_starts(), 2u);
  Script s{.room = {1}};
  q.retry(Time{seconds(1)}, s);
  EXPECT_EQ(q.task_starts(), 1u) << "the first start went";
}

TEST(HoldQueue, ARequestThatLeavesIsNeverAskedAgain) {
  HoldQueue<int> q = queue_of({1, 2, 3});
  EXPECT_FALSE(q.leave(2)) << "not the head: the deadline stays";
  EXPECT_FALSE(q.leave(7)) << "not held";
  EXPECT_TRUE(q.leave(1)) << "the head: the deadline moves";
  EXPECT_EQ(q.deadline(), Time{seconds(62)});
  Script s{.room = {1, 2, 3}};
  q.retry(Time{seconds(5)}, s);
  EXPECT_EQ(s.asked, (std::vector<int>{3}));
}

TEST(HoldQueue, StopRefusesTheHeldAndEveryLaterRequest) {
  HoldQueue<int> q = queue_of({1, 2});
  EXPECT_EQ(q.stop(), (std::vector<int>{1, 2}));
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.stopped());
  EXPECT_FALSE(q.join(3, facts_of(3), Time{seconds(5)}));
}

}  // namespace
}  // namespace warden::core
