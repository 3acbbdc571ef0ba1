#include "report/side_by_side.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "report/report.hpp"

namespace warden::report {

namespace {

struct Compared {
  const char* title;
  const char* unit;
  int decimals;
  std::function<std::optional<double>(const Row&)> get;
};

std::optional<double> value(const std::optional<Row>& row, const Compared& c) {
  return row ? c.get(*row) : std::nullopt;
}

std::string number(const std::optional<double>& v, int decimals) {
  return v && std::isfinite(*v) ? format_trimmed(*v, decimals) : "n/a";
}

std::string ratio(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a || !b || *a == 0.0 || !std::isfinite(*b / *a)) {
    return "n/a";
  }
  return fmt::format("{:.2f}", *b / *a);
}

}  // namespace

std::string side_by_side_markdown(const std::vector<Row>& a, const std::vector<Row>& b,
                                  std::string_view label_a, std::string_view label_b) {
  std::vector<Compared> compared = {
      {"Prefix hits", "(%)", 1, [](const Row& r) { return r.prefix_hits; }},
      {"Stayed on replica", "(%)", 1, [](const Row& r) { return r.stayed_on_replica; }},
      {"TTFB p50", "(s)", 2, [](const Row& r) { return r.ttfb_p50; }},
  };
  const auto has_tasks = [](const std::vector<Row>& rows) {
    return std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.task_time_p50.has_value(); });
  };
  if (has_tasks(a) || has_tasks(b)) {
    compared.push_back({"Tasks/h", "", 0, [](const Row& r) { return r.tasks_per_hour; }});
    compared.push_back({"Task p50", "(s)", 1, [](const Row& r) { return r.task_time_p50; }});
    compared.push_back({"Task p95", "(s)", 1, [](const Row& r) { return r.task_time_p95; }});
  }
  // pair_rows pairs by policy: give each run's rows a policy of its own.
  std::vector<Row> both;
  for (Row r : a) {
    r.policy = "a";
    both.push_back(std::move(r));
  }
  for (Row r : b) {
    r.policy = "b";
    both.push_back(std::move(r));
  }
  const std::string arrow = fmt::format("{} → {}", label_a, label_b);
  Grid grid;
  std::vector<std::string> header = {"Sessions"};
  for (const Compared& c : compared) {
    header.push_back(*c.unit != '\0' ? fmt::format("{} {} {}", c.title, c.unit, arrow)
                                     : fmt::format("{} {}", c.title, arrow));
    header.emplace_back("ratio");
  }
  header.push_back(fmt::format("Errors {}", arrow));
  grid.push_back(std::move(header));
  for (const ComparisonRow& p : pair_rows(both, "a", "b")) {
    std::vector<std::string> line = {std::to_string(p.sessions)};
    for (const Compared& c : compared) {
      const std::optional<double> va = value(p.a, c);
      const std::optional<double> vb = value(p.b, c);
      line.push_back(fmt::format("{} → {}", number(va, c.decimals), number(vb, c.decimals)));
      line.push_back(ratio(va, vb));
    }
    auto errors = [](const std::optional<Row>& r) {
      return r && r->errors ? std::to_string(*r->errors) : std::string("n/a");
    };
    line.push_back(fmt::format("{} → {}", errors(p.a), errors(p.b)));
    grid.push_back(std::move(line));
  }
  return grid_markdown(grid);
}

}  // namespace warden::report
