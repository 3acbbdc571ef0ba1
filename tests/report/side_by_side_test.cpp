#include "report/side_by_side.hpp"

#include <gtest/gtest.h>

namespace warden::report {
namespace {

Row level(std::string policy, int sessions, std::optional<double> hits, std::optional<double> stayed,
          std::optional<double> p50, std::int64_t errors = 0) {
  Row r;
  r.policy = std::move(policy);
  r.sessions = sessions;
  r.prefix_hits = hits;
  r.stayed_on_replica = stayed;
  r.ttfb_p50 = p50;
  r.errors = errors;
  return r;
}

TEST(SideBySide, PairsLevelsOfTwoRunsWithTheRatioOfEachColumn) {
  const std::vector<Row> one = {level("one warden", 4, 86.0, 100.0, 0.2),
                                level("one warden", 8, 85.0, 99.0, 0.5)};
  // The second run has the same policy label: the rows are paired by run, not by label.
  const std::vector<Row> two = {level("one warden", 4, 86.0, 100.0, 0.25, 1),
                                level("one warden", 16, 70.0, std::nullopt, 1.0)};
  const std::string md = side_by_side_markdown(one, two, "1 warden", "2 wardens");
  EXPECT_EQ(md,
            "| Sessions | Prefix hits (%) 1 warden → 2 wardens | ratio | Stayed on replica (%) 1 warden → 2 "
            "wardens "
            "| ratio | TTFB p50 (s) 1 warden → 2 wardens | ratio | Errors 1 warden → 2 wardens |\n"
            "|---|---|---|---|---|---|---|---|\n"
            "| 4 | 86 → 86 | 1.00 | 100 → 100 | 1.00 | 0.2 → 0.25 | 1.25 | 0 → 1 |\n"
            "| 8 | 85 → n/a | n/a | 99 → n/a | n/a | 0.5 → n/a | n/a | 0 → n/a |\n"
            "| 16 | n/a → 70 | n/a | n/a → n/a | n/a | n/a → 1 | n/a | n/a → 0 |\n");
}

TEST(SideBySide, TaskColumnsWhenEitherRunMeasuredTasks) {
  Row a = level("a", 8, 80.0, 100.0, 0.5);
  Row b = level("b", 8, 90.0, 100.0, 0.4);
  b.tasks_per_hour = 200;
  b.task_time_p50 = 30;
  b.task_time_p95 = 60;
  const std::string md = side_by_side_markdown({a}, {b}, "x", "y");
  EXPECT_NE(md.find("| Tasks/h x → y | ratio | Task p50 (s) x → y | ratio | Task p95 (s) x → y | ratio |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| n/a → 200 | n/a | n/a → 30 | n/a | n/a → 60 | n/a |"), std::string::npos) << md;
  EXPECT_EQ(side_by_side_markdown({a}, {a}, "x", "y").find("Tasks/h"), std::string::npos);
}

TEST(SideBySide, NoRatioAgainstZero) {
  const std::string md =
      side_by_side_markdown({level("a", 2, 0.0, 50.0, 0.1)}, {level("b", 2, 10.0, 25.0, 0.3)}, "a", "b");
  EXPECT_NE(md.find("| 2 | 0 → 10 | n/a | 50 → 25 | 0.50 | 0.1 → 0.3 | 3.00 |"), std::string::npos) << md;
}

}  // namespace
}  // namespace warden::report
