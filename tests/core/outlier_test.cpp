// Outlier ejection of one replica and the progress watchdog: the counter, the backoff, the probe, the
// stall judgement, all from outcomes and times passed in.
#include "core/outlier.hpp"

#include <gtest/gtest.h>

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
  w.observe(2.0, 100.0, seconds(0));
  w.observe(2.0, 100.0, seconds(10));
  EXPECT_FALSE(w.stalled(seconds(20), seconds(19)));
  w.observe(2.0, 100.0, seconds(20));
  EXPECT_TRUE(w.stalled(seconds(20), seconds(20)));
}

TEST(ProgressWatch, MovingCountersOrNothingRunningIsNoStall) {
  ProgressWatch w;
  w.observe(2.0, 100.0, seconds(0));
  w.observe(2.0, 150.0, seconds(15));  // progress at 15 s
  EXPECT_FALSE(w.stalled(seconds(20), seconds(30)));
  EXPECT_TRUE(w.stalled(seconds(20), seconds(35)));
  w.observe(0.0, 150.0, seconds(36));  // idle: nothing to make progress on
  EXPECT_FALSE(w.stalled(seconds(20), seconds(100)));
  w.observe(1.0, 150.0, seconds(100));  // busy again: the bound counts from here
  EXPECT_FALSE(w.stalled(seconds(20), seconds(119)));
  EXPECT_TRUE(w.stalled(seconds(20), seconds(120)));
}

TEST(ProgressWatch, AnEngineWithoutCountersIsNeverJudged) {
  ProgressWatch w;
  w.observe(3.0, std::nullopt, seconds(0));
  w.observe(3.0, std::nullopt, seconds(100));
  EXPECT_FALSE(w.stalled(seconds(20), seconds(100)));
  w.observe(std::nullopt, 5.0, seconds(101));
  w.observe(std::nullopt, 5.0, seconds(200));
  EXPECT_FALSE(w.stalled(seconds(20), seconds(200)));
}

}  // namespace
}  // namespace warden::core
