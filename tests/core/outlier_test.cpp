// Outlier ejection of one replica and the progress watchdog: the counter, the backoff, the probe, the
// stall judgement, all from outcomes and times passed in.
#include "core/outlier.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace warden::core {
namespace {

using std::chrono::seconds;

OutlierConfig config() {
  OutlierConfig c;
  c.consecutive_failures = 3;
  c.base_ejection = seconds(10);
  c.max_ejection = seconds(25);
  c.stall_after = seconds(20);
  return c;
}

// Ejects `o` at `now` with three failures in a row.
void eject(OutlierState& o, Time now) {
  for (int i = 0; i < 3; ++i) {
    o.failure(config(), OutlierReason::first_byte, now);
  }
  ASSERT_TRUE(o.ejected());
}

TEST(Outlier, TheNthFailureInARowEjects) {
  OutlierState o;
  EXPECT_FALSE(o.failure(config(), OutlierReason::first_byte, seconds(1)));
  EXPECT_FALSE(o.failure(config(), OutlierReason::gateway_error, seconds(2)));
  EXPECT_TRUE(o.routable(seconds(2)));
  EXPECT_TRUE(o.failure(config(), OutlierReason::stream_stall, seconds(3)));
  EXPECT_TRUE(o.ejected());
  EXPECT_EQ(o.reason(), OutlierReason::stream_stall);  // the failure that ejected it
  EXPECT_EQ(o.until(), seconds(13));
  EXPECT_FALSE(o.routable(seconds(12)));
  EXPECT_EQ(outlier_reason_name(o.reason()), "stream_stall");
}

TEST(Outlier, ASuccessBetweenFailuresStartsTheCountAgain) {
  OutlierState o;
  o.failure(config(), OutlierReason::first_byte, seconds(1));
  o.failure(config(), OutlierReason::first_byte, seconds(2));
  EXPECT_FALSE(o.success(seconds(3)));
  EXPECT_FALSE(o.failure(config(), OutlierReason::first_byte, seconds(4)));
  EXPECT_FALSE(o.failure(config(), OutlierReason::first_byte, seconds(5)));
  EXPECT_FALSE(o.ejected());
  EXPECT_EQ(o.consecutive_failures(), 2);
}

TEST(Outlier, AfterTheBackoffOneProbeGoesAndItsSuccessReadmits) {
  OutlierState o;
  eject(o, seconds(0));
  EXPECT_FALSE(o.take_probe(seconds(9)));  // still in its backoff
  EXPECT_TRUE(o.routable(seconds(10)));
  EXPECT_TRUE(o.take_probe(seconds(10)));
  EXPECT_FALSE(o.routable(seconds(11)));  // the probe is out: nothing else goes
  EXPECT_FALSE(o.take_probe(seconds(11)));
  EXPECT_TRUE(o.success(seconds(12)));
  EXPECT_FALSE(o.ejected());
  EXPECT_TRUE(o.routable(seconds(12)));
  EXPECT_FALSE(o.take_probe(seconds(12)));  // admitted: no more probes
}

TEST(Outlier, AFailedProbeEjectsForLongerUpToTheCap) {
  OutlierState o;
  eject(o, seconds(0));
  ASSERT_TRUE(o.take_probe(seconds(10)));
  EXPECT_TRUE(o.failure(config(), OutlierReason::first_byte, seconds(11)));  // one failure is enough
  EXPECT_EQ(o.ejections(), 2);
  EXPECT_EQ(o.until(), seconds(31));  // 2 x 10 s
  ASSERT_TRUE(o.take_probe(seconds(31)));
  EXPECT_TRUE(o.failure(config(), OutlierReason::gateway_error, seconds(31)));
  EXPECT_EQ(o.until(), seconds(56));  // 3 x 10 s capped at 25 s
  EXPECT_EQ(o.reason(), OutlierReason::gateway_error);
}

TEST(Outlier, RequestsSentBeforeTheEjectionDoNotJudgeIt) {
  OutlierState o;
  eject(o, seconds(0));
  EXPECT_FALSE(o.success(seconds(1)));
  EXPECT_TRUE(o.ejected());
  EXPECT_FALSE(o.failure(config(), OutlierReason::first_byte, seconds(2)));
  EXPECT_EQ(o.until(), seconds(10));  // not lengthened
}

TEST(Outlier, ADroppedProbeLetsAnotherRequestProbe) {
  OutlierState o;
  eject(o, seconds(0));
  ASSERT_TRUE(o.take_probe(seconds(10)));
  o.probe_dropped();
  EXPECT_TRUE(o.routable(seconds(10)));
  EXPECT_TRUE(o.take_probe(seconds(10)));
}

TEST(Outlier, TheBackoffStartsOverAfterALongAdmission) {
  OutlierState o;
  eject(o, seconds(0));
  ASSERT_TRUE(o.take_probe(seconds(10)));
  ASSERT_TRUE(o.success(seconds(10)));
  eject(o, seconds(20));  // 10 s after its re-admission: the second of a run
  EXPECT_EQ(o.until(), seconds(40));
  ASSERT_TRUE(o.take_probe(seconds(40)));
  ASSERT_TRUE(o.success(seconds(40)));
  eject(o, seconds(100));  // 60 s in, more than max_ejection: a fresh start
  EXPECT_EQ(o.ejections(), 1);
  EXPECT_EQ(o.until(), seconds(110));
}

TEST(Outlier, AStallEjectsAtOnceAndOnlyOnce) {
  OutlierState o;
  EXPECT_TRUE(o.stalled(config(), seconds(5)));
  EXPECT_EQ(o.reason(), OutlierReason::no_progress);
  EXPECT_EQ(o.until(), seconds(15));
  EXPECT_FALSE(o.stalled(config(), seconds(6)));  // already out
  EXPECT_EQ(o.ejections(), 1);
}

TEST(ProgressWatch, RunningWithFrozenCountersIsAStallAfterTheBound) {
  ProgressWatch w;
  w.observe(2.0, 100.0, false, seconds(0));
  w.observe(2.0, 100.0, false, seconds(10));
  EXPECT_FALSE(w.stalled(seconds(20), seconds(19)));
  w.observe(2.0, 100.0, false, seconds(20));
  EXPECT_TRUE(w.stalled(seconds(20), seconds(20)));
}

TEST(ProgressWatch, MovingCountersOrNothingRunningIsNoStall) {
  ProgressWatch w;
  w.observe(2.0, 100.0, false, seconds(0));
  w.observe(2.0, 150.0, false, seconds(15));  // progress at 15 s
  EXPECT_FALSE(w.stalled(seconds(20), seconds(30)));
  EXPECT_TRUE(w.stalled(seconds(20), seconds(35)));
  w.observe(0.0, 150.0, false, seconds(36));  // idle: nothing to make progress on
  EXPECT_FALSE(w.stalled(seconds(20), seconds(100)));
  w.observe(1.0, 150.0, false, seconds(100));  // busy again: the bound counts from here
  EXPECT_FALSE(w.stalled(seconds(20), seconds(119)));
  EXPECT_TRUE(w.stalled(seconds(20), seconds(120)));
}

TEST(ProgressWatch, AnEngineWithoutCountersIsNeverJudged) {
  ProgressWatch w;
  w.observe(3.0, std::nullopt, false, seconds(0));
  w.observe(3.0, std::nullopt, false, seconds(100));
  EXPECT_FALSE(w.stalled(seconds(20), seconds(100)));
  w.observe(std::nullopt, 5.0, false, seconds(101));
  w.observe(std::nullopt, 5.0, false, seconds(200));
  EXPECT_FALSE(w.stalled(seconds(20), seconds(200)));
}

// An engine that hangs may say `running 0`: the warden's own requests there without a first token are
// the work it has, and counters standing still past the bound are a stall all the same.
TEST(ProgressWatch, RequestsAwaitingTheirFirstTokenAreWorkWhateverTheEngineReports) {
  ProgressWatch w;
  w.observe(0.0, 100.0, true, seconds(0));
  w.observe(0.0, 100.0, true, seconds(10));
  EXPECT_FALSE(w.stalled(seconds(20), seconds(19)));
  EXPECT_TRUE(w.stalled(seconds(20), seconds(20)));
  w.observe(0.0, 100.0, false, seconds(21));  // nothing awaited any more: idle
  EXPECT_FALSE(w.stalled(seconds(20), seconds(60)));
}

// A prefill backlog is time the counters may stand still: its tokens at the measured rate (an assumed
// slow one while unmeasured), times the slack, on top of stall_after.
TEST(StallAllowance, ALongPromptIsGivenItsPrefillTimeWithSlack) {
  EXPECT_EQ(stall_allowance(config(), 0, 2000), seconds(20));
  EXPECT_EQ(stall_allowance(config(), 10'000, 2000), seconds(20) + seconds(15));  // 5 s x 3
  EXPECT_EQ(stall_allowance(config(), 1000, 0), seconds(20) + seconds(6));        // 2 s x 3 at 500/s
  EXPECT_EQ(stall_allowance(config(), 1000, std::numeric_limits<double>::quiet_NaN()), seconds(26));
}

// Whatever waits to be prefilled (20 pinned prompts of 60,000 tokens, or one at the assumed rate), the
// allowance is at most 3 x stall_after: a wedged replica is not kept in service by its queue.
TEST(StallAllowance, NoBacklogHoldsTheWatchdogPastThreeStallAfters) {
  EXPECT_EQ(stall_allowance(config(), 20 * 60'000, 5000), seconds(60));
  EXPECT_EQ(stall_allowance(config(), 60'000, 0), seconds(60)) << "one prompt at the assumed 500 tokens/s";
  EXPECT_EQ(stall_allowance(config(), 100'000, 2000), seconds(60));
  EXPECT_EQ(stall_allowance(config(), std::numeric_limits<std::uint64_t>::max(), 1e-300), seconds(60));
}

// max_ejection_percent: at most that share is out, and at least one may be; the panic threshold ignores
// the ejections when fewer than its share of the answering replicas are left.
TEST(FleetBound, EjectionsAreBoundedAndTooFewLeftMeansRouteToAll) {
  OutlierConfig c = config();  // 50 % and 50 %
  EXPECT_TRUE(may_eject(c, 0, 1));
  EXPECT_FALSE(may_eject(c, 1, 1));
  EXPECT_TRUE(may_eject(c, 0, 2));
  EXPECT_FALSE(may_eject(c, 1, 2));
  EXPECT_TRUE(may_eject(c, 1, 4));
  EXPECT_FALSE(may_eject(c, 2, 4));
  c.max_ejection_percent = 100;
  EXPECT_TRUE(may_eject(c, 1, 2));
  EXPECT_FALSE(may_eject(c, 2, 2));
  EXPECT_FALSE(panic(c, 1, 2));
  EXPECT_TRUE(panic(c, 0, 2));
  EXPECT_TRUE(panic(c, 0, 1));
  EXPECT_TRUE(panic(c, 1, 3));
  EXPECT_FALSE(panic(c, 0, 0));  // nothing answers: health, not ejection, says no
  c.panic_percent = 0;
  EXPECT_FALSE(panic(c, 0, 2));
}

// Without room under the bound a failure is counted and the replica stays in; the next failure, with room
// by then, ejects it.
TEST(Outlier, AFailureWithoutRoomIsCountedAndEjectsLater) {
  OutlierState o;
  o.failure(config(), OutlierReason::first_byte, seconds(1));
  o.failure(config(), OutlierReason::first_byte, seconds(2));
  EXPECT_FALSE(o.failure(config(), OutlierReason::first_byte, seconds(3), false));
  EXPECT_FALSE(o.ejected());
  EXPECT_FALSE(o.failure(config(), OutlierReason::first_byte, seconds(4), false));
  EXPECT_TRUE(o.failure(config(), OutlierReason::first_byte, seconds(5), true));
  EXPECT_EQ(o.until(), seconds(15));
}

}  // namespace
}  // namespace warden::core
