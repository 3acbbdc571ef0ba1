// The admission queue on the I/O thread: a routed waiter gets its decision, a cancelled waiter leaves, the
// head goes at its deadline by the timer, stop() wakes and refuses everyone. The rules of the wait
// themselves (order, bound, deadline, Retry-After) are core::HoldQueue's, tested in tests/core.
#include "gateway/runtime/admission_queue.hpp"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <vector>

using namespace warden;
using gateway::AdmissionQueue;
using namespace std::chrono_literals;

namespace {

// Routes a request while `room` lasts (then holds it), remembering the sessions it saw, in order.
struct ScriptedRouter {
  int room = 0;
  std::vector<std::uint64_t> seen;
  std::vector<core::Time> waits;
  core::Time admit_after = core::Time::max();  // a request that waited this long goes regardless

  core::Decision route(const core::RequestFacts& f) {
    seen.push_back(f.session->hash);
    waits.push_back(f.queued_for);
    if (room > 0 || f.queued_for >= admit_after) {
      room -= room > 0 ? 1 : 0;
      return {core::ReplicaIndex{0}, core::Route::new_conversation, core::NoReplicaReason::none};
    }
    return {std::nullopt, core::Route::queued, core::NoReplicaReason::none};
  }
};

core::RequestFacts facts_of(std::uint64_t session) {
  core::RequestFacts f;
  f.session = core::SessionKey{session};
  return f;
}

struct QueueTest : ::testing::Test {
  boost::asio::io_context ioc;
  ScriptedRouter router;
  AdmissionQueue queue{ioc.get_executor(), [this](const core::RequestFacts& f) { return router.route(f); }};

  void SetUp() override {
    queue.configure({.admission = {.enabled = true, .max_queue = 3, .max_wait = 3600s}});
  }
};

}  // namespace

TEST_F(QueueTest, ARoutedWaiterGetsItsDecisionAndWasRoutedWithItsWait) {
  const auto now = AdmissionQueue::Clock::now();
  auto a = queue.join(facts_of(1), now);
  auto b = queue.join(facts_of(2), now + 1s);
  ASSERT_TRUE(a && b);
  router.room = 1;
  EXPECT_EQ(queue.retry(now + 3s), 1u);
  EXPECT_EQ(router.waits, (std::vector<core::Time>{3s, 2s}));
  EXPECT_EQ(a->outcome, AdmissionQueue::Outcome::routed);
  EXPECT_TRUE(a->decision.ok());
  EXPECT_EQ(b->outcome, AdmissionQueue::Outcome::waiting);
  EXPECT_EQ(queue.size(), 1u);
  EXPECT_NE(queue.join(facts_of(3), now), nullptr);
  EXPECT_NE(queue.join(facts_of(4), now), nullptr);
  EXPECT_EQ(queue.join(facts_of(5), now), nullptr) << "max_queue (3) requests wait: refused";
}

TEST_F(QueueTest, ACancelledWaiterLeavesTheQueueAndIsNeverRouted) {
  const auto now = AdmissionQueue::Clock::now();
  auto a = queue.join(facts_of(1), now);
  auto b = queue.join(facts_of(2), now);
  auto c = queue.join(facts_of(3), now);
  boost::asio::cancellation_signal client_left;
  std::exception_ptr b_ended;
  bool b_done = false;
  boost::asio::co_spawn(ioc, queue.wait(b),
                        boost::asio::bind_cancellation_slot(client_left.slot(), [&](std::exception_ptr e) {
                          b_ended = e;
                          b_done = true;
                        }));
  ioc.poll();  // b waits
  ASSERT_FALSE(b_done);
  client_left.emit(boost::asio::cancellation_type::terminal);
  ioc.poll();
  ASSERT_TRUE(b_done);
  EXPECT_TRUE(b_ended) << "the wait ends with the cancellation";
  EXPECT_EQ(queue.size(), 2u);
  router.room = 5;
  EXPECT_EQ(queue.retry(now), 2u);
  EXPECT_EQ(router.seen, (std::vector<std::uint64_t>{1, 3}));
  EXPECT_EQ(b->outcome, AdmissionQueue::Outcome::waiting);
}

TEST_F(QueueTest, TheHeadIsRoutedAgainAtItsMaxWait) {
  queue.configure({.admission = {.enabled = true, .max_queue = 3, .max_wait = 50ms},
                   .task_admission = {.enabled = false}});
  router.admit_after = 50ms;
  const auto joined = AdmissionQueue::Clock::now();
  auto a = queue.join(facts_of(1), joined);
  auto b = queue.join(facts_of(2), joined + 1h);  // far from its bound
  bool a_done = false;
  boost::asio::co_spawn(ioc, queue.wait(a), [&](std::exception_ptr) { a_done = true; });
  // Runs until the timer routed a and a's wait returned; b's own timer is then armed an hour out.
  while (!a_done && ioc.run_one() > 0) {
  }
  ASSERT_TRUE(a_done);
  EXPECT_EQ(a->outcome, AdmissionQueue::Outcome::routed);
  EXPECT_GE(AdmissionQueue::Clock::now() - joined, 50ms);
  EXPECT_EQ(b->outcome, AdmissionQueue::Outcome::waiting);
  EXPECT_EQ(queue.size(), 1u);
  queue.stop();
}

TEST_F(QueueTest, StopRefusesTheWaitingAndEveryLaterRequest) {
  const auto now = AdmissionQueue::Clock::now();
  auto a = queue.join(facts_of(1), now);
  bool a_done = false;
  boost::asio::co_spawn(ioc, queue.wait(a), [&](std::exception_ptr e) { a_done = !e; });
  ioc.poll();
  queue.stop();
  ioc.run();  // nothing left to wait for: no timer, no waiter
  EXPECT_TRUE(a_done);
  EXPECT_EQ(a->outcome, AdmissionQueue::Outcome::refused);
  EXPECT_EQ(queue.join(facts_of(2), now), nullptr);
}

// The fair turn through the gateway's queue: the tenant with the fewest tasks under way (as the queue's
// TenantLoad counts them) goes first, interactive before headless, and the queue counts by class what it
// held and let in.
TEST(AdmissionQueueTurn, AnotherTenantsStartGoesBeforeTheFloodOfATenantWithTasksUnderWay) {
  boost::asio::io_context ioc;
  ScriptedRouter router;
  AdmissionQueue queue(
      ioc.get_executor(), [&](const core::RequestFacts& f) { return router.route(f); },
      [](std::uint64_t tenant) { return tenant == 10 ? 3.0 : 0.0; });
  queue.configure({.admission = {.max_queue = 8, .tenant_queue = 2}});
  const auto now = AdmissionQueue::Clock::now();
  const auto of = [](std::uint64_t session, std::uint64_t tenant) {
    core::RequestFacts f = facts_of(session);
    f.tenant = tenant;
    return f;
  };
  ASSERT_NE(queue.join(of(1, 10), now), nullptr);
  ASSERT_NE(queue.join(of(2, 10), now + 1s), nullptr);
  EXPECT_EQ(queue.join(of(3, 10), now + 2s), nullptr) << "tenant 10 holds its cap";
  const auto b = queue.join(of(4, 20), now + 3s);
  ASSERT_NE(b, nullptr) << "another tenant still joins";
  core::RequestFacts person = of(5, 10);
  person.work_class = core::WorkClass::interactive;
  EXPECT_EQ(queue.join(person, now + 4s), nullptr) << "the cap is the tenant's, whatever the class";
  router.room = 1;
  EXPECT_EQ(queue.retry(now + 5s), 1u);
  EXPECT_EQ(router.seen, (std::vector<std::uint64_t>{4, 1})) << "20 first, then 10's oldest, held";
  EXPECT_EQ(b->outcome, AdmissionQueue::Outcome::routed);
  const auto classes = queue.by_class();
  EXPECT_EQ(classes[0].held, 2u);
  EXPECT_EQ(classes[0].let_in, 1u);
  EXPECT_DOUBLE_EQ(classes[0].waited_s, 2.0);
  const auto held = queue.held(now + 6s);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].tenant, 10u);
  EXPECT_DOUBLE_EQ(held[0].waited_s, 6.0);
}
