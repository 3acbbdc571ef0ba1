// Working-set admission over scripted snapshots, and the Router's hysteresis state.
#include <gtest/gtest.h>

#include <array>

#include "core/admission.hpp"
#include "core/decide.hpp"
#include "core/helpers.hpp"
#include "core/made_router.hpp"
#include "core/router.hpp"

namespace warden::core {
namespace {

using namespace std::chrono_literals;
using testing::idle_snapshot;
using testing::known_conversation;
using testing::new_conversation;
using testing::routed;
using testing::unrouted;

// Two replicas of 10,000 KV tokens holding the given working sets; admission on (high 1.0, low 0.9).
Snapshot working_sets(std::uint64_t first, std::uint64_t second, bool holding = false) {
  Snapshot s = idle_snapshot(2);
  s.routing.admission.enabled = true;
  s.routing.admission.high_water = 1.0;
  s.routing.admission.low_water = 0.9;
  s.admission_holding = holding;
  s.replicas[0].held_tokens = first;
  s.replicas[1].held_tokens = second;
  for (auto& r : s.replicas) {
    r.kv_capacity_tokens = 10'000;
    r.active_conversations = 2;
    r.waiting = 1;  // short of KV: requests wait (only_when_waiting holds too)
  }
  return s;
}

TEST(Admission, HoldsANewConversationThatFitsNowhere) {
  ScriptedRng rng;
  EXPECT_EQ(decide(working_sets(9'500, 9'500), new_conversation(42, 1000), rng),
            unrouted(Route::queued, NoReplicaReason::none));
  EXPECT_TRUE(decide(working_sets(9'500, 9'500), new_conversation(42, 1000), rng).queued());
}

TEST(Admission, PlacesOnlyWhereThereIsRoom) {
  ScriptedRng rng;
  // Replica 0 has the lower placement score (far fewer conversations) but no room for the prompt.
  Snapshot s = working_sets(9'500, 8'000);
  s.replicas[0].active_conversations = 0;
  s.replicas[1].active_conversations = 30;
  EXPECT_EQ(decide(s, new_conversation(42, 1000), rng), routed(1, Route::new_conversation));
  s.routing.admission.enabled = false;
  EXPECT_EQ(decide(s, new_conversation(42, 1000), rng), routed(0, Route::new_conversation));
}

TEST(Admission, HysteresisAdmitsUnderTheLowMarkOnceHolding) {
  ScriptedRng rng;
  // 8,500 + 1,000 = 9,500: within the high mark (10,000), above the low one (9,000).
  EXPECT_EQ(decide(working_sets(8'500, 9'900), new_conversation(42, 1000), rng),
            routed(0, Route::new_conversation));
  EXPECT_TRUE(decide(working_sets(8'500, 9'900, true), new_conversation(42, 1000), rng).queued());
  EXPECT_EQ(decide(working_sets(7'900, 9'900, true), new_conversation(42, 1000), rng),
            routed(0, Route::new_conversation));
}

TEST(Admission, TheWaitBoundAdmitsOverCapacity) {
  ScriptedRng rng;
  RequestFacts waited = new_conversation(42, 1000);
  waited.queued_for = working_sets(0, 0).routing.admission.max_wait - 1ns;
  EXPECT_TRUE(decide(working_sets(9'500, 9'500), waited, rng).queued());
  waited.queued_for += 1ns;
  EXPECT_EQ(decide(working_sets(9'500, 9'500), waited, rng).route, Route::new_conversation);
  EXPECT_TRUE(decide(working_sets(9'500, 9'500), waited, rng).ok());
}

TEST(Admission, AResidentConversationIsNeverHeld) {
  ScriptedRng rng;
  const Snapshot full = working_sets(20'000, 20'000, true);
  EXPECT_EQ(decide(full, known_conversation(1), rng), routed(1, Route::sticky));
}

// A task's start on home 0 (a known conversation whose thread has no assistant turn since the prompt).
RequestFacts task_start(std::uint32_t prompt_tokens, bool start = true) {
  RequestFacts f = known_conversation(0);
  f.prompt_tokens = prompt_tokens;
  f.task_start = start;
  return f;
}

TEST(Admission, HoldsATaskStartWhileItsHomeHasNoRoom) {
  ScriptedRng rng;
  Snapshot s = working_sets(9'500, 2'000);
  s.routing.admission.hold_task_starts = true;
  EXPECT_TRUE(decide(s, task_start(1000), rng).queued());
  // Released on its home, not elsewhere, once the home has room.
  s.replicas[0].held_tokens = 8'000;
  EXPECT_EQ(decide(s, task_start(1000), rng), routed(0, Route::sticky));
}

TEST(Admission, ATaskUnderWayIsNeverHeld) {
  ScriptedRng rng;
  Snapshot s = working_sets(20'000, 20'000, true);
  s.routing.admission.hold_task_starts = true;
  EXPECT_EQ(decide(s, task_start(1000, false), rng), routed(0, Route::sticky));
}

TEST(Admission, TaskStartsAreHeldOnlyWhenAskedAndUntilTheWaitBound) {
  ScriptedRng rng;
  Snapshot s = working_sets(9'500, 9'500);
  EXPECT_EQ(decide(s, task_start(1000), rng), routed(0, Route::sticky));
  s.routing.admission.hold_task_starts = true;
  RequestFacts waited = task_start(1000);
  waited.queued_for = s.routing.admission.max_wait;
  EXPECT_EQ(decide(s, waited, rng), routed(0, Route::sticky));
  s.routing.admission.enabled = false;
  EXPECT_EQ(decide(s, task_start(1000), rng), routed(0, Route::sticky));
}

TEST(Admission, UnknownCapacityOrOffNeverHolds) {
  ScriptedRng rng;
  Snapshot unknown = working_sets(9'500, 9'500);
  for (auto& r : unknown.replicas) {
    r.kv_capacity_tokens = 0;
  }
  EXPECT_TRUE(decide(unknown, new_conversation(42, 1000), rng).ok());
  // One replica of unknown capacity counts as room: nothing to judge it by.
  Snapshot mixed = working_sets(9'500, 9'500);
  mixed.replicas[1].kv_capacity_tokens = 0;
  EXPECT_EQ(decide(mixed, new_conversation(42, 1000), rng), routed(1, Route::new_conversation));
  Snapshot off = working_sets(9'500, 9'500);
  off.routing.admission.enabled = false;
  EXPECT_TRUE(decide(off, new_conversation(42, 1000), rng).ok());
}

TEST(Admission, KvInUseCountsWhenItExceedsTheActiveWorkingSet) {
  ScriptedRng rng;
  // Replica 1's conversations left the active window but their requests still run: 95 % of its KV.
  Snapshot s = working_sets(9'500, 0);
  s.replicas[1].kv_usage = 0.95;
  EXPECT_TRUE(decide(s, new_conversation(42, 1000), rng).queued());
  s.replicas[1].kv_usage = 0.5;
  EXPECT_EQ(decide(s, new_conversation(42, 1000), rng), routed(1, Route::new_conversation));
}

TEST(Admission, AReplicaWithNothingWaitingTakesANewConversation) {
  ScriptedRng rng;
  // The estimate says full, but nothing waits on replica 1: its KV is not short (ended conversations
  // still count in held_tokens until they leave the active window).
  Snapshot s = working_sets(9'500, 9'500);
  s.replicas[1].waiting = 0;
  EXPECT_TRUE(decide(s, new_conversation(42, 1000), rng).queued()) << "only with only_when_waiting";
  s.routing.admission.only_when_waiting = true;
  EXPECT_EQ(decide(s, new_conversation(42, 1000), rng), routed(1, Route::new_conversation));
  // ... unless a request sent since that scrape has not started answering (a burst of new ones).
  s.replicas[1].prefill_backlog_tokens = 11'000;
  EXPECT_TRUE(decide(s, new_conversation(42, 1000), rng).queued());
}

TEST(Admission, OtherWardensConversationsAreResidentToo) {
  ScriptedRng rng;
  Snapshot s = working_sets(4'000, 9'500);
  s.replicas[0].peer_held_tokens = 5'500;
  EXPECT_TRUE(decide(s, new_conversation(42, 1000), rng).queued());
}

TEST(Admission, UnhealthyReplicasDoNotCountAsRoom) {
  ScriptedRng rng;
  Snapshot s = working_sets(9'500, 0);
  s.replicas[1].healthy = false;
  EXPECT_TRUE(decide(s, new_conversation(42, 1000), rng).queued());
}

// Router: two replicas of 10,000 tokens; conversations of 4,000-token prompts.
class AdmissionRouter : public ::testing::Test {
 protected:
  AdmissionRouter() : router_(made_router(config())) {
    for (auto& m : metrics_) {
      m.kv_capacity_tokens = 10'000;
      m.waiting = 1;
    }
  }
  static RouterConfig config() {
    RoutingConfig routing;
    routing.max_num_seqs = 32;
    routing.admission.enabled = true;
    routing.admission.high_water = 1.0;
    routing.admission.low_water = 0.5;
    return router_config(routing);
  }
  Decision route(std::uint64_t key, Time queued_for = Time{0}) {
    RequestFacts f = new_conversation(key, 4'000);
    f.queued_for = queued_for;
    return router_.route(f, metrics_, now_, rng_);
  }
  Router router_;
  std::array<ReplicaMetrics, 2> metrics_{};
  Time now_ = 1s;
  SplitMixRng rng_{7};
};

TEST_F(AdmissionRouter, HoldsWhenFullCommitsNothingAndCountsTheAttempt) {
  for (std::uint64_t key = 1; key <= 4; ++key) {
    ASSERT_TRUE(route(key).ok()) << key;
  }
  const Decision held = route(5);
  EXPECT_TRUE(held.queued());
  EXPECT_FALSE(router_.home_of(5, now_));
  const RouterView view = router_.view(now_);
  EXPECT_EQ(view.queued, 1u);
  EXPECT_TRUE(view.admission_holding);
  // Its turns keep going to the residents' homes.
  EXPECT_EQ(route(1).route, Route::sticky);
}

TEST_F(AdmissionRouter, HoldingUntilTheWorkingSetIsUnderTheLowMark) {
  SessionTableConfig sessions;
  sessions.adaptive_gap_factor = 0;  // fixed window: a conversation leaves it 5 minutes after its last turn
  router_.set_session_config(sessions);
  for (std::uint64_t key = 1; key <= 4; ++key) {
    ASSERT_TRUE(route(key).ok());
  }
  EXPECT_TRUE(route(5).queued());  // 8,000 + 4,000 > 10,000 on both replicas
  // Six minutes on, one conversation per replica comes back; the other two have left the window.
  now_ += 6min;
  std::array<bool, 2> refreshed{};
  for (std::uint64_t key = 1; key <= 4; ++key) {
    const ReplicaIndex home = *router_.home_of(key, now_);
    if (!refreshed[home]) {
      refreshed[home] = true;
      ASSERT_EQ(route(key).route, Route::sticky);
    }
  }
  ASSERT_EQ(router_.snapshot(metrics_, now_).replicas[0].held_tokens, 4'000u);
  ASSERT_EQ(router_.snapshot(metrics_, now_).replicas[1].held_tokens, 4'000u);
  // 4,000 + 4,000 fits the high mark (10,000) but not the low one (5,000): still held.
  EXPECT_TRUE(route(5).queued());
  now_ += 6min;  // everyone has left the window
  EXPECT_EQ(route(5).route, Route::new_conversation);
  EXPECT_FALSE(router_.view(now_).admission_holding);
  EXPECT_EQ(route(6).route, Route::new_conversation);  // under the high mark again
}

TEST_F(AdmissionRouter, AdmitsOverCapacityAtTheWaitBound) {
  for (std::uint64_t key = 1; key <= 4; ++key) {
    ASSERT_TRUE(route(key).ok());
  }
  EXPECT_TRUE(route(5, 29s).queued());
  EXPECT_TRUE(route(5, 30s).ok());
  // Admitted over capacity: still holding (the next one waits as well).
  EXPECT_TRUE(router_.view(now_).admission_holding);
  EXPECT_TRUE(route(6).queued());
}

}  // namespace
}  // namespace warden::core
