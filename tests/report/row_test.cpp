#include "report/row.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <sstream>

namespace warden::report {
namespace {

TEST(Percentile, InterpolatesBetweenClosestRanksLikeNumPy) {
  // numpy.percentile([1, 2, 3, 4], 50) == 2.5; 95 -> 3.85; 0 -> 1; 100 -> 4.
  const std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(*percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(*percentile(v, 95), 3.85);
  EXPECT_DOUBLE_EQ(*percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(*percentile(v, 100), 4.0);
  EXPECT_DOUBLE_EQ(*percentile({7.0}, 95), 7.0);
  EXPECT_FALSE(percentile({}, 50).has_value());
  // numpy.percentile(range(1, 21), 95) == 19.05
  std::vector<double> twenty;
  for (int i = 1; i <= 20; ++i) {
    twenty.push_back(i);
  }
  EXPECT_NEAR(*percentile(twenty, 95), 19.05, 1e-12);
}

RequestRecord req(double start, double end, double ttfb, std::int64_t out, std::size_t turn = 0,
                  bool last = false) {
  RequestRecord r;
  r.started_at = start;
  r.ended_at = end;
  r.ttfb = ttfb;
  r.output_tokens = out;
  r.turn = turn;
  r.session_finished = last;
  return r;
}

TEST(LevelRecorder, ComputesEveryColumnFromSyntheticRecords) {
  LevelRecorder rec("on", 4);
  rec.begin(100.0);
  rec.set_prefix_start({1000.0, 4000.0});
  rec.record(req(100, 110, 1.0, 256, 0));
  rec.record(req(110, 120, 2.0, 256, 1));
  rec.record(req(120, 130, 3.0, 200, 2, true));
  RequestRecord failed = req(125, 126, 0.0, 0, 1);
  failed.ok = false;
  failed.ttfb.reset();
  rec.record(failed);
  rec.add_busy_sample(2);
  rec.add_busy_sample(3);
  rec.add_busy_sample(4);
  rec.add_busy_sample(3);
  rec.set_prefix_end({4000.0, 8000.0});
  rec.end(220.0);  // a 120 s window

  const Row row = rec.row();
  EXPECT_EQ(row.policy, "on");
  EXPECT_EQ(row.sessions, 4);
  EXPECT_DOUBLE_EQ(*row.sessions_per_hour, 1 * 3600.0 / 120.0);
  EXPECT_DOUBLE_EQ(*row.output_tokens_per_min, 712 * 60.0 / 120.0);
  EXPECT_DOUBLE_EQ(*row.ttfb_p50, 2.0);
  EXPECT_DOUBLE_EQ(*row.ttfb_p95, 2.9);
  EXPECT_DOUBLE_EQ(*row.replicas_busy, 3.0);
  EXPECT_DOUBLE_EQ(*row.prefix_hits, 75.0);
  EXPECT_FALSE(row.stayed_on_replica.has_value());  // no route headers: no warden
  EXPECT_EQ(row.errors, 1);
}

TEST(LevelRecorder, DrainAfterTheWindowCountsForTtfbButNotThroughput) {
  LevelRecorder rec("off", 2);
  rec.begin(0.0);
  rec.record(req(0, 50, 1.0, 100, 5, true));
  rec.end(60.0);
  rec.record(req(55, 70, 9.0, 100, 5, true));  // ended during the drain
  const Row row = rec.row();
  EXPECT_DOUBLE_EQ(*row.output_tokens_per_min, 100.0);
  EXPECT_DOUBLE_EQ(*row.sessions_per_hour, 60.0);
  EXPECT_DOUBLE_EQ(*row.ttfb_p50, 5.0);
}

TEST(LevelRecorder, StayedOnReplicaIsTheStickyShareOfRoutedFollowUps) {
  LevelRecorder rec("on", 2);
  rec.begin(0.0);
  auto routed = [&](std::size_t turn, const char* route) {
    RequestRecord r = req(1, 2, 0.5, 10, turn);
    r.route = route;
    rec.record(r);
  };
  routed(0, "new");  // first turns are not follow-ups
  routed(0, "new");
  routed(1, "sticky");
  routed(2, "sticky");
  routed(3, "sticky");
  routed(4, "spill");
  routed(2, "balanced");  // affinity off: no home, not counted
  rec.end(10.0);
  EXPECT_DOUBLE_EQ(*rec.row().stayed_on_replica, 75.0);

  LevelRecorder off("off", 2);
  off.begin(0.0);
  RequestRecord r = req(1, 2, 0.5, 10, 1);
  r.route = "balanced";
  off.record(r);
  off.end(10.0);
  EXPECT_FALSE(off.row().stayed_on_replica.has_value());
}

TEST(LevelRecorder, StayedByReplicaComparesEachFollowUpWithItsSessionsPreviousTurn) {
  LevelRecorder rec("two wardens", 2, StayedBy::replica);
  rec.begin(0.0);
  auto served = [&](std::uint64_t session, std::size_t turn, const char* route, std::optional<int> replica,
                    bool ok = true) {
    RequestRecord r = req(1, 2, 0.5, 10, turn);
    r.session_index = session;
    r.route = route;
    r.replica = replica;
    r.ok = ok;
    rec.record(r);
  };
  // Session 0 alternates between two wardens that agree on replica 1; each says "new" on its first turn.
  served(0, 0, "new", 1);
  served(1, 0, "new", 2);
  served(0, 1, "new", 1);     // the second warden's first sight of it: "new", yet the same replica
  served(1, 1, "sticky", 3);  // "sticky" at a warden whose home differs from the previous turn's replica
  served(0, 2, "sticky", 1);
  served(1, 2, "balanced", 3);  // affinity off: not counted
  served(0, 3, "sticky", 1, false);
  served(0, 4, "sticky", 1);             // its previous turn failed: no previous replica, not counted
  served(1, 3, "sticky", std::nullopt);  // no replica header: not counted
  rec.end(10.0);
  // Counted: (0,1) stayed, (1,1) moved, (0,2) stayed.
  EXPECT_NEAR(*rec.row().stayed_on_replica, 200.0 / 3.0, 1e-9);

  // The same records by route: every non-balanced follow-up, stayed when "sticky".
  LevelRecorder by_route("one warden", 2);
  for (const RequestRecord& r : rec.records()) {
    by_route.record(r);
  }
  by_route.end(10.0);
  // (0,1) new; (1,1) (0,2) (0,4) (1,3) sticky.
  EXPECT_DOUBLE_EQ(*by_route.row().stayed_on_replica, 80.0);
}

TEST(LevelRecorder, NotApplicableColumnsAreEmpty) {
  LevelRecorder rec("x", 8);
  rec.begin(5.0);
  const Row early = rec.row();  // no time has passed: no rates
  EXPECT_FALSE(early.sessions_per_hour.has_value());
  EXPECT_FALSE(early.ttfb_p50.has_value());
  EXPECT_FALSE(early.replicas_busy.has_value());
  EXPECT_FALSE(early.prefix_hits.has_value());
  EXPECT_EQ(early.errors, 0);
  // Before end(), the window runs to the given time (Ctrl-C reports what was measured so far).
  rec.record(req(5, 6, 0.2, 60));
  EXPECT_DOUBLE_EQ(*rec.row(65.0).output_tokens_per_min, 60.0);
  // A counter that went backwards (engine restarted) is not measurable.
  rec.set_prefix_start({500, 1000});
  rec.set_prefix_end({10, 20});
  EXPECT_FALSE(rec.row(65.0).prefix_hits.has_value());
  rec.set_prefix_end({500, 1000});
  EXPECT_FALSE(rec.row(65.0).prefix_hits.has_value());  // no queries in the level
}

TEST(LevelRecorder, TaskColumnsFromTheRequestsThatEndedTasks) {
  LevelRecorder rec("agents", 2);
  rec.begin(100.0);
  // Tasks of 10, 20, 30 and 40 s (final reply received - first request sent); the last ends after the
  // window, so it counts for the times (as TTFB does while draining) but not for tasks per hour.
  const double lengths[] = {10, 20, 30, 40};
  for (int i = 0; i < 4; ++i) {
    RequestRecord tool = req(100.0 + i, 101.0 + i, 0.5, 10, 0);
    rec.record(tool);  // a tool round: no task ends
    RequestRecord last = req(150.0 + i, 150.0 + i + lengths[i], 0.5, 10, 1);
    last.ended_at = 100.0 + i * 30.0 + lengths[i];
    last.task_started_at = last.ended_at - lengths[i];
    rec.record(last);
  }
  RequestRecord failed = req(110.0, 111.0, 0.5, 10, 1);
  failed.ok = false;
  failed.task_started_at = 100.0;  // a failed request ends no task
  rec.record(failed);
  rec.end(200.0);  // window of 100 s: tasks ending at 110, 150, 190 inside; 230 after
  const Row row = rec.row();
  ASSERT_TRUE(row.tasks_per_hour && row.task_time_p50 && row.task_time_p95);
  EXPECT_DOUBLE_EQ(*row.tasks_per_hour, 3 * 3600.0 / 100.0);
  EXPECT_DOUBLE_EQ(*row.task_time_p50, 25.0);
  EXPECT_DOUBLE_EQ(*row.task_time_p95, 38.5);  // numpy.percentile([10, 20, 30, 40], 95)
  // Without a task-ending request the columns do not apply.
  LevelRecorder chat("chat", 1);
  chat.begin(0.0);
  chat.record(req(0.0, 1.0, 0.5, 10, 0, true));
  chat.end(10.0);
  const Row plain = chat.row();
  EXPECT_FALSE(plain.tasks_per_hour || plain.task_time_p50 || plain.task_time_p95);
}

TEST(LevelRecorder, ProgressTracksRequestsSessionsAndMedian) {
  LevelRecorder rec("on", 2);
  rec.begin(0.0);
  rec.record(req(0, 1, 3.0, 10, 0));
  rec.record(req(1, 2, 1.0, 10, 1, true));
  const Progress p = rec.progress();
  EXPECT_EQ(p.requests, 2U);
  EXPECT_EQ(p.sessions_finished, 1U);
  EXPECT_EQ(p.errors, 0U);
  EXPECT_DOUBLE_EQ(*p.ttfb_p50, 2.0);
}

TEST(RecordsJsonl, OneObjectPerRequestWithNullsForUnknowns) {
  RequestRecord a = req(1.5, 3.0, 0.25, 12, 2);
  a.session_index = 7;
  a.route = "sticky";
  a.replica = 3;
  a.target = 1;
  RequestRecord b = req(2.0, 2.5, 0.0, 0, 0);
  b.ok = false;
  b.ttfb.reset();
  std::istringstream in(records_jsonl("on", 4, {a, b}));
  std::string line;
  std::vector<boost::json::object> objs;
  while (std::getline(in, line)) {
    objs.push_back(boost::json::parse(line).as_object());
  }
  ASSERT_EQ(objs.size(), 2U);
  EXPECT_EQ(objs[0].at("policy").as_string(), "on");
  EXPECT_EQ(objs[0].at("sessions").to_number<int>(), 4);
  EXPECT_EQ(objs[0].at("session").to_number<int>(), 7);
  EXPECT_EQ(objs[0].at("turn").to_number<int>(), 2);
  EXPECT_DOUBLE_EQ(objs[0].at("ttfb").as_double(), 0.25);
  EXPECT_EQ(objs[0].at("route").as_string(), "sticky");
  EXPECT_EQ(objs[0].at("replica").to_number<int>(), 3);
  EXPECT_EQ(objs[0].at("target").to_number<int>(), 1);
  EXPECT_FALSE(objs[1].at("ok").as_bool());
  EXPECT_TRUE(objs[1].at("ttfb").is_null());
  EXPECT_TRUE(objs[1].at("route").is_null());
  EXPECT_TRUE(objs[1].at("replica").is_null());
  EXPECT_TRUE(objs[1].at("target").is_null());
}

}  // namespace
}  // namespace warden::report
