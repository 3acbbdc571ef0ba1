#include "report/groups.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace warden::report {

namespace {

struct Tally {
  std::size_t tasks = 0;
  std::vector<double> waits;
  std::vector<double> ttfbs;
};

}  // namespace

GroupRow group_row(const AgentGroup& group, std::size_t tasks, double seconds, std::vector<double> waits,
                   std::vector<double> ttfbs) {
  GroupRow row{.group = group.name, .agents = group.agents};
  row.tasks_per_hour = seconds > 0 ? static_cast<double>(tasks) * 3600.0 / seconds : 0.0;
  row.per_agent = group.agents > 0 ? row.tasks_per_hour / static_cast<double>(group.agents) : 0.0;
  row.starts = waits.size();
  row.held =
      static_cast<std::size_t>(std::count_if(waits.begin(), waits.end(), [](double w) { return w > 0; }));
  row.wait_p50 = percentile(waits, 50).value_or(0.0);
  row.wait_p95 = percentile(waits, 95).value_or(0.0);
  row.ttfb_p50 = percentile(ttfbs, 50).value_or(0.0);
  row.ttfb_p95 = percentile(std::move(ttfbs), 95).value_or(0.0);
  return row;
}

boost::json::object group_json(const std::string& policy, int sessions, const GroupRow& row) {
  return boost::json::object{
      {"policy", policy},
      {"sessions", sessions},
      {"group", row.group},
      {"agents", row.agents},
      {"tasks_per_hour", row.tasks_per_hour},
      {"tasks_per_agent_hour", row.per_agent},
      {"prefix_hits", row.hits ? boost::json::value(*row.hits) : boost::json::value(nullptr)},
      {"task_starts", row.starts},
      {"held", row.held},
      {"start_wait_p50", row.wait_p50},
      {"start_wait_p95", row.wait_p95},
      {"start_ttfb_p50", row.ttfb_p50},
      {"start_ttfb_p95", row.ttfb_p95}};
}

std::vector<GroupRow> group_rows(std::span<const RequestRecord> records, std::span<const AgentGroup> groups,
                                 double begin, double end) {
  std::vector<Tally> tally(groups.size());
  for (const RequestRecord& r : records) {
    if (!r.group || *r.group >= groups.size()) {
      continue;
    }
    Tally& t = tally[*r.group];
    if (r.task_started_at && r.ended_at >= begin && r.ended_at < end) {
      ++t.tasks;
    }
    if (r.task_start && r.started_at >= begin && r.started_at < end) {
      t.waits.push_back(r.queued.value_or(0.0));
      if (r.ttfb) {
        t.ttfbs.push_back(*r.ttfb);
      }
    }
  }
  std::vector<GroupRow> rows;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    rows.push_back(group_row(groups[g], tally[g].tasks, end - begin, std::move(tally[g].waits),
                             std::move(tally[g].ttfbs)));
  }
  return rows;
}

Grid group_grid_header() {
  return Grid{{"policy", "sessions", "group", "agents", "tasks/h", "tasks/h/agent", "hits %", "starts",
               "held", "start wait p50 s", "start wait p95 s", "start ttfb p50 s", "start ttfb p95 s"}};
}

void append_group_grid(Grid& grid, const std::string& policy, int sessions, std::span<const GroupRow> rows) {
  for (const GroupRow& r : rows) {
    grid.push_back({policy, std::to_string(sessions), r.group, std::to_string(r.agents),
                    fmt::format("{:.0f}", r.tasks_per_hour), fmt::format("{:.2f}", r.per_agent),
                    r.hits ? fmt::format("{:.1f}", *r.hits) : std::string("-"), std::to_string(r.starts),
                    std::to_string(r.held), fmt::format("{:.1f}", r.wait_p50),
                    fmt::format("{:.1f}", r.wait_p95), fmt::format("{:.1f}", r.ttfb_p50),
                    fmt::format("{:.1f}", r.ttfb_p95)});
  }
}

}  // namespace warden::report
