#include "workload/closed_loop.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "workload/text.hpp"

namespace warden::workload {
namespace {

WorkloadConfig small(std::size_t turns, double think_time = 0.0) {
  WorkloadConfig c;
  c.system_tokens = 50;
  c.first_tokens = 80;
  c.turn_tokens = 20;
  c.turns = turns;
  c.think_time = think_time;
  c.chars_per_token = 4.0;  // fixed: these tests are about the loop, not sizes
  return c;
}

TEST(ClosedLoop, StartsWithAllSessionsDue) {
  const Workload w(small(3));
  ClosedLoop loop(w, 4, 10.0);
  EXPECT_EQ(loop.next_ready_at(), 10.0);
  EXPECT_TRUE(loop.take_ready(9.9).empty());
  const std::vector<std::size_t> ready = loop.take_ready(10.0);
  EXPECT_EQ(ready, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(loop.in_flight_count(), 4U);
  EXPECT_FALSE(loop.next_ready_at().has_value());
  EXPECT_TRUE(loop.take_ready(100.0).empty());
  std::set<std::uint64_t> indices;
  for (std::size_t s = 0; s < 4; ++s) {
    indices.insert(loop.conversation(s).session_index);
    EXPECT_EQ(loop.conversation(s).turn, 0U);
  }
  EXPECT_EQ(indices, (std::set<std::uint64_t>{0, 1, 2, 3}));
}

TEST(ClosedLoop, StaggerSpreadsTheFirstTurns) {
  WorkloadConfig cfg = small(3);
  cfg.stagger = 8.0;
  const Workload w(cfg);
  ClosedLoop loop(w, 4, 100.0);
  EXPECT_EQ(loop.take_ready(100.0), (std::vector<std::size_t>{0}));
  EXPECT_EQ(loop.next_ready_at(), 102.0);
  EXPECT_TRUE(loop.take_ready(101.9).empty());
  EXPECT_EQ(loop.take_ready(104.0), (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(loop.take_ready(106.0), (std::vector<std::size_t>{3}));
  cfg.stagger = -1.0;
  EXPECT_FALSE(validate(cfg).has_value());
}

TEST(ClosedLoop, ReplyIsAppendedAndNextTurnFollows) {
  const Workload w(small(3));
  ClosedLoop loop(w, 1, 0.0);
  loop.take_ready(0.0);
  const TurnEnd end = loop.complete(0, 1.5, "the reply");
  EXPECT_FALSE(end.session_finished);
  EXPECT_EQ(end.turn, 0U);
  EXPECT_EQ(end.next_ready_at, 1.5);
  const Conversation& c = loop.conversation(0);
  ASSERT_EQ(c.messages.size(), 3U);
  EXPECT_EQ(c.messages[1].text, "the reply");
  EXPECT_EQ(c.turn, 1U);
  EXPECT_EQ(loop.take_ready(1.5), (std::vector<std::size_t>{0}));
}

TEST(ClosedLoop, FinishedSessionIsReplacedByANewOne) {
  const Workload w(small(2));
  ClosedLoop loop(w, 2, 0.0);
  loop.take_ready(0.0);
  const std::string first_id = loop.conversation(1).session_id;
  loop.complete(1, 1.0, "r");
  loop.take_ready(1.0);
  const TurnEnd end = loop.complete(1, 2.0, "r");
  EXPECT_TRUE(end.session_finished);
  EXPECT_EQ(end.session_index, 1U);
  EXPECT_EQ(loop.sessions_finished(), 1U);
  const Conversation& fresh = loop.conversation(1);
  EXPECT_EQ(fresh.session_index, 2U);
  EXPECT_EQ(fresh.turn, 0U);
  EXPECT_EQ(fresh.messages.size(), 1U);
  EXPECT_NE(fresh.session_id, first_id);
  EXPECT_EQ(loop.sessions_started(), 3U);
  EXPECT_EQ(loop.take_ready(2.0), (std::vector<std::size_t>{1}));
}

TEST(ClosedLoop, ThinkTimeDelaysTheNextTurnAndTheReplacement) {
  const Workload w(small(2, 2.5));
  ClosedLoop loop(w, 1, 0.0);
  loop.take_ready(0.0);
  loop.complete(0, 5.0, "r");
  EXPECT_EQ(loop.next_ready_at(), 7.5);
  EXPECT_TRUE(loop.take_ready(7.4).empty());
  EXPECT_EQ(loop.take_ready(7.5).size(), 1U);
  const TurnEnd end = loop.complete(0, 8.0, "r");
  EXPECT_TRUE(end.session_finished);
  EXPECT_EQ(end.next_ready_at, 10.5);
  EXPECT_TRUE(loop.take_ready(10.0).empty());
  EXPECT_EQ(loop.take_ready(10.5).size(), 1U);
}

TEST(ClosedLoop, FailureAbandonsTheSessionAfterTheRetryDelay) {
  const Workload w(small(4));
  ClosedLoop loop(w, 1, 0.0);
  loop.take_ready(0.0);
  const TurnEnd end = loop.fail(0, 3.0, 1.0);
  EXPECT_FALSE(end.session_finished);
  EXPECT_EQ(end.next_ready_at, 4.0);
  EXPECT_EQ(loop.sessions_failed(), 1U);
  EXPECT_EQ(loop.sessions_finished(), 0U);
  EXPECT_EQ(loop.conversation(0).session_index, 1U);
  EXPECT_TRUE(loop.take_ready(3.5).empty());
  EXPECT_EQ(loop.take_ready(4.0).size(), 1U);
}

TEST(ClosedLoop, StopHandsOutNothingButAcceptsInFlightEnds) {
  const Workload w(small(3));
  ClosedLoop loop(w, 3, 0.0);
  loop.take_ready(0.0);
  loop.complete(0, 1.0, "r");
  loop.stop();
  EXPECT_FALSE(loop.next_ready_at().has_value());
  EXPECT_TRUE(loop.take_ready(5.0).empty());
  const TurnEnd end = loop.complete(1, 2.0, "r");
  EXPECT_FALSE(end.next_ready_at.has_value());
  loop.fail(2, 2.0);
  EXPECT_EQ(loop.in_flight_count(), 0U);
  EXPECT_THROW(loop.complete(2, 3.0, "r"), std::logic_error);
}

// A load tool that carries its sessions into the next level: the running ones go on where they were, the
// added ones are new sessions due at once; a loop never shrinks, and a stopped one does not grow.
TEST(ClosedLoop, GrowKeepsTheRunningSessionsAndAddsNewOnesDueNow) {
  const Workload w(small(3, 1.0));
  ClosedLoop loop(w, 2, 0.0);
  loop.take_ready(0.0);
  loop.complete(0, 1.0, "r");  // session 0's next turn is due at 2.0; session 1 is still in flight
  EXPECT_FALSE(loop.grow(1, 1.5));
  ASSERT_TRUE(loop.grow(4, 1.5));
  EXPECT_EQ(loop.slots(), 4U);
  EXPECT_EQ(loop.sessions_started(), 4U);
  EXPECT_TRUE(loop.in_flight(1));
  EXPECT_EQ(loop.conversation(0).session_index, 0U);
  EXPECT_EQ(loop.conversation(2).session_index, 2U);
  EXPECT_EQ(loop.conversation(3).session_index, 3U);
  EXPECT_EQ(loop.conversation(2).turn, 0U);
  EXPECT_EQ(loop.take_ready(1.5), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(loop.take_ready(2.0), (std::vector<std::size_t>{0}));
  EXPECT_GT(loop.conversation(0).turn, 0U);
  loop.stop();
  EXPECT_FALSE(loop.grow(5, 3.0));
  EXPECT_EQ(loop.slots(), 4U);
}

TEST(ClosedLoop, SameFirstIndexReplaysTheSamePrompts) {
  const Workload w(small(2));
  ClosedLoop a(w, 3, 0.0, 10);
  ClosedLoop b(w, 3, 50.0, 10);
  for (std::size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(a.conversation(s).messages[0].text, b.conversation(s).messages[0].text);
    EXPECT_EQ(a.conversation(s).session_index, 10 + s);
  }
}

// A virtual-time run with random service times: the level holds N sessions at every instant, indices are
// handed out once each, and every session ends after exactly `turns` turns.
TEST(ClosedLoop, HoldsNSessionsThroughARandomVirtualTimeRun) {
  const std::size_t n = 6;
  const Workload w(small(3, 0.25));
  ClosedLoop loop(w, n, 0.0);
  SplitMix64 rng(42);
  std::multimap<double, std::size_t> finishing;  // end time -> slot
  std::map<std::uint64_t, std::size_t> turns_seen;
  double now = 0.0;
  for (int step = 0; step < 2000; ++step) {
    for (std::size_t slot : loop.take_ready(now)) {
      ++turns_seen[loop.conversation(slot).session_index];
      finishing.emplace(now + 0.1 + static_cast<double>(rng.below(1000)) / 500.0, slot);
    }
    // Every slot is either in flight or waiting for its think time: never more, never fewer than N.
    std::size_t waiting = 0;
    for (std::size_t s = 0; s < n; ++s) {
      waiting += loop.in_flight(s) ? 0 : 1;
    }
    ASSERT_EQ(loop.in_flight_count() + waiting, n);
    ASSERT_EQ(loop.in_flight_count(), finishing.size());
    const std::optional<double> due = loop.next_ready_at();
    const double next_end = finishing.empty() ? 1e18 : finishing.begin()->first;
    if (due && *due <= next_end) {
      now = *due;
      continue;
    }
    ASSERT_FALSE(finishing.empty());
    now = next_end;
    const std::size_t slot = finishing.begin()->second;
    finishing.erase(finishing.begin());
    if (rng.below(50) == 0) {
      loop.fail(slot, now, 0.5);
    } else {
      loop.complete(slot, now, "ok");
    }
  }
  EXPECT_GT(loop.sessions_finished(), 100U);
  EXPECT_EQ(loop.sessions_started(), loop.sessions_finished() + loop.sessions_failed() + n);
  std::size_t complete_sessions = 0;
  for (const auto& [index, turns] : turns_seen) {
    EXPECT_LE(turns, 3U);
    complete_sessions += turns == 3 ? 1 : 0;
  }
  EXPECT_GE(complete_sessions, loop.sessions_finished());
}

}  // namespace
}  // namespace warden::workload
