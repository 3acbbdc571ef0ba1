#pragma once
// A level's figures by group of agents (classes of work and tenants: `bench --interactive`, `--tenants`),
// read from its request records: each group's tasks/h, per agent, and how long its task starts were held
// at the warden (x-warden-queued) and took to their first token.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "report/report.hpp"
#include "report/row.hpp"

namespace warden::report {

struct AgentGroup {
  std::string name;  // "headless", "tenant 1", "interactive"
  std::size_t agents = 0;
};

struct GroupRow {
  std::string group;
  std::size_t agents = 0;
  double tasks_per_hour = 0;  // tasks that ended inside the window, per hour
  double per_agent = 0;
  std::size_t starts = 0;  // task starts sent inside the window
  std::size_t held = 0;    // of them, held at the warden
  double wait_p50 = 0;     // their hold (0 for one not held), seconds
  double wait_p95 = 0;
  double ttfb_p50 = 0;  // their send to first token, seconds
  double ttfb_p95 = 0;
  std::optional<double> hits;  // % of its requests' prompt tokens served from cache, where known (simulate)
};

// One group's row: `tasks` that ended in a window of `seconds`, the holds and TTFBs of its task starts.
GroupRow group_row(const AgentGroup& group, std::size_t tasks, double seconds, std::vector<double> waits,
                   std::vector<double> ttfbs);
// The group's row as JSON: {policy, sessions, group, agents, tasks_per_hour, ...} (bench and simulate).
boost::json::object group_json(const std::string& policy, int sessions, const GroupRow& row);

// The rows of `groups` (RequestRecord::group indexes it) over the window [begin, end).
std::vector<GroupRow> group_rows(std::span<const RequestRecord> records, std::span<const AgentGroup> groups,
                                 double begin, double end);

// The rows as a table: policy, sessions, then each group's figures.
void append_group_grid(Grid& grid, const std::string& policy, int sessions, std::span<const GroupRow> rows);
Grid group_grid_header();

}  // namespace warden::report
