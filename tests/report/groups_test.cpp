// A level's figures by group of agents, read from its request records (bench --interactive, --tenants).
#include "report/groups.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace warden::report {
namespace {

RequestRecord start(std::size_t group, double at, std::optional<double> queued, double ttfb) {
  RequestRecord r;
  r.group = group;
  r.task_start = true;
  r.started_at = at;
  r.ended_at = at + ttfb + 1;
  r.queued = queued;
  r.ttfb = ttfb;
  return r;
}

RequestRecord task_end(std::size_t group, double started, double ended) {
  RequestRecord r;
  r.group = group;
  r.started_at = ended - 1;
  r.ended_at = ended;
  r.task_started_at = started;
  return r;
}

TEST(GroupRows, EachGroupsTasksPerAgentAndItsStartsWaits) {
  const std::vector<AgentGroup> groups{{"tenant 1", 2}, {"interactive", 1}};
  std::vector<RequestRecord> records{
      start(0, 10, 30.0, 32),
      start(0, 20, std::nullopt, 2),
      start(1, 15, std::nullopt, 1),
      task_end(0, 10, 500),
      task_end(0, 20, 900),
      task_end(1, 15, 300),
      task_end(1, 400, 3700),                        // ended after the window
      start(1, 3650, std::nullopt, 1),               // sent after the window
      RequestRecord{.started_at = 5, .ended_at = 6}  // no group: not counted
  };
  const std::vector<GroupRow> rows = group_rows(records, groups, 0, 3600);
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_EQ(rows[0].group, "tenant 1");
  EXPECT_DOUBLE_EQ(rows[0].tasks_per_hour, 2.0);
  EXPECT_DOUBLE_EQ(rows[0].per_agent, 1.0);
  EXPECT_EQ(rows[0].starts, 2U);
  EXPECT_EQ(rows[0].held, 1U);
  EXPECT_DOUBLE_EQ(rows[0].wait_p95, 30.0 * 0.95);  // between 0 and 30, by linear interpolation
  EXPECT_DOUBLE_EQ(rows[1].tasks_per_hour, 1.0);
  EXPECT_EQ(rows[1].starts, 1U);
  EXPECT_EQ(rows[1].held, 0U);
  EXPECT_DOUBLE_EQ(rows[1].wait_p95, 0.0);
}

TEST(GroupRows, TheJsonAndTheTableCarryEveryFigure) {
  const GroupRow row = group_row({"headless", 4}, 8, 1800, {0, 10}, {1, 3});
  const boost::json::object j = group_json("affinity", 4, row);
  EXPECT_EQ(j.at("group").as_string(), "headless");
  EXPECT_DOUBLE_EQ(j.at("tasks_per_hour").as_double(), 16.0);
  EXPECT_DOUBLE_EQ(j.at("tasks_per_agent_hour").as_double(), 4.0);
  Grid grid = group_grid_header();
  append_group_grid(grid, "affinity", 4, std::vector<GroupRow>{row});
  ASSERT_EQ(grid.size(), 2U);
  EXPECT_EQ(grid[1].size(), grid[0].size());
}

}  // namespace
}  // namespace warden::report
