#include "report/report.hpp"

#include <fmt/core.h>

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

namespace warden::report {

namespace {

enum class Style { thousands, two_decimals, one_decimal };

// The table's columns after "Sessions", in routing.md's order, with their JSON keys.
struct Column {
  const char* key;
  const char* title;
  const char* unit;         // appended to the title, e.g. "(s)"
  const char* short_title;  // terminal tables, where width is scarce
  Style style;
  std::function<std::optional<double>(const Row&)> get;
  bool tasks = false;  // an agent-task column: shown in tables only when some row has a value
  // Shown in tables and CSV only when some row has a value, and written to JSON only where it has one
  // (outputs without it stay as they were).
  bool sparse = false;
};

const std::array<Column, 12>& columns() {
  static const std::array<Column, 12> cols = {{
      {"sessions_per_hour", "Sessions/h", "", "sess/h", Style::thousands,
       [](const Row& r) { return r.sessions_per_hour; }},
      {"output_tokens_per_min", "Output tokens/min", "", "tok/min", Style::thousands,
       [](const Row& r) { return r.output_tokens_per_min; }},
      {"ttfb_p50", "TTFB p50", "(s)", "p50 s", Style::two_decimals, [](const Row& r) { return r.ttfb_p50; }},
      {"ttfb_p95", "TTFB p95", "(s)", "p95 s", Style::two_decimals, [](const Row& r) { return r.ttfb_p95; }},
      {"replicas_busy", "Replicas busy", "", "busy", Style::two_decimals,
       [](const Row& r) { return r.replicas_busy; }},
      {"prefix_hits", "Prefix hits", "(%)", "hits %", Style::one_decimal,
       [](const Row& r) { return r.prefix_hits; }},
      {"stayed_on_replica", "Stayed on replica", "(%)", "stayed %", Style::one_decimal,
       [](const Row& r) { return r.stayed_on_replica; }},
      {"errors", "Errors", "", "errors", Style::thousands,
       [](const Row& r) -> std::optional<double> {
         if (!r.errors) {
           return std::nullopt;
         }
         return static_cast<double>(*r.errors);
       }},
      {"tasks_per_hour", "Tasks/h", "", "tasks/h", Style::thousands,
       [](const Row& r) { return r.tasks_per_hour; }, true},
      {"task_time_p50", "Task p50", "(s)", "task p50 s", Style::one_decimal,
       [](const Row& r) { return r.task_time_p50; }, true},
      {"task_time_p95", "Task p95", "(s)", "task p95 s", Style::one_decimal,
       [](const Row& r) { return r.task_time_p95; }, true},
      {"expected_cached", "Expected cached", "(% ±1 block)", "exp ok %", Style::one_decimal,
       [](const Row& r) { return r.expected_cached; }, false, true},
  }};
  return cols;
}

// Whether the task columns apply: some row measured agent tasks.
bool any_tasks(const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    if (r.task_time_p50 || r.tasks_per_hour) {
      return true;
    }
  }
  return false;
}

constexpr std::size_t kStayedColumn = 6;
constexpr std::size_t kErrorsColumn = 7;
constexpr std::size_t kExpectedColumn = 11;

// Whether a column is shown for these rows: a task column when some row measured tasks, a sparse one
// when some row has its value.
bool shown(const Column& c, const std::vector<Row>& rows, bool tasks) {
  if (c.tasks && !tasks) {
    return false;
  }
  return !c.sparse ||
         std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return c.get(r).has_value(); });
}

std::string cell(const Column& c, const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) {
    return "n/a";
  }
  switch (c.style) {
    case Style::thousands:
      return format_thousands(*v);
    case Style::two_decimals:
      return format_trimmed(*v, 2);
    case Style::one_decimal:
      return format_trimmed(*v, 1);
  }
  return "n/a";
}

std::string title(const Column& c, std::string_view infix = {}) {
  std::string t = c.title;
  if (!infix.empty()) {
    t += " ";
    t += infix;
  }
  if (*c.unit != '\0') {
    t += " ";
    t += c.unit;
  }
  return t;
}

Grid single_grid(const std::vector<Row>& rows, bool compact) {
  const bool tasks = any_tasks(rows);
  Grid grid;
  std::vector<std::string> header = {compact ? "policy" : "Policy", compact ? "sessions" : "Sessions"};
  for (const Column& c : columns()) {
    if (shown(c, rows, tasks)) {
      header.push_back(compact ? c.short_title : title(c));
    }
  }
  grid.push_back(std::move(header));
  for (const Row& r : rows) {
    std::vector<std::string> line = {r.policy, std::to_string(r.sessions)};
    for (const Column& c : columns()) {
      if (shown(c, rows, tasks)) {
        line.push_back(cell(c, c.get(r)));
      }
    }
    grid.push_back(std::move(line));
  }
  return grid;
}

std::optional<double> side(const std::optional<Row>& row, const Column& c) {
  if (!row) {
    return std::nullopt;
  }
  return c.get(*row);
}

Grid comparison_grid(const std::vector<Row>& rows, std::string_view a, std::string_view b, bool compact) {
  const std::vector<ComparisonRow> paired = pair_rows(rows, a, b);
  bool stayed_both = false;
  bool any_errors = false;
  for (const ComparisonRow& p : paired) {
    const Column& stayed = columns()[kStayedColumn];
    stayed_both = stayed_both || (side(p.a, stayed) && side(p.b, stayed));
    const Column& errors = columns()[kErrorsColumn];
    any_errors = any_errors || side(p.a, errors) || side(p.b, errors);
  }
  const std::string arrow = fmt::format("{} → {}", a, b);
  const bool tasks = any_tasks(rows);
  const auto visible = [&](std::size_t j) {
    return (j != kErrorsColumn || any_errors) && shown(columns()[j], rows, tasks);
  };

  Grid grid;
  std::vector<std::string> header = {compact ? "sessions" : "Sessions"};
  for (std::size_t j = 0; j < columns().size(); ++j) {
    if (!visible(j)) {
      continue;
    }
    const bool plain = j == kStayedColumn && !stayed_both;
    if (compact) {
      header.push_back(columns()[j].short_title);
    } else {
      header.push_back(title(columns()[j], plain ? std::string_view{} : std::string_view{arrow}));
    }
  }
  grid.push_back(std::move(header));

  for (const ComparisonRow& p : paired) {
    std::vector<std::string> line = {std::to_string(p.sessions)};
    for (std::size_t j = 0; j < columns().size(); ++j) {
      if (!visible(j)) {
        continue;
      }
      const Column& c = columns()[j];
      const std::optional<double> va = side(p.a, c);
      const std::optional<double> vb = side(p.b, c);
      if (j == kStayedColumn && !(va && vb)) {
        line.push_back(cell(c, va ? va : vb));
      } else {
        line.push_back(fmt::format("{} → {}", cell(c, va), cell(c, vb)));
      }
    }
    grid.push_back(std::move(line));
  }
  return grid;
}

// JSON numbers: rounded to 4 decimals, shortest round-trip text; null when missing or not finite.
std::string json_number(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) {
    return "null";
  }
  double rounded = std::round(*v * 1e4) / 1e4;
  if (rounded == 0.0) {
    rounded = 0.0;  // no "-0"
  }
  return fmt::format("{}", rounded);
}

void write_value(std::string& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::double_:
      out += json_number(v.get_double());
      return;
    case boost::json::kind::array: {
      out += "[";
      bool first = true;
      for (const auto& e : v.get_array()) {
        out += first ? "" : ", ";
        first = false;
        write_value(out, e);
      }
      out += "]";
      return;
    }
    case boost::json::kind::object: {
      out += "{";
      bool first = true;
      for (const auto& kv : v.get_object()) {
        out += first ? "" : ", ";
        first = false;
        out += boost::json::serialize(boost::json::string(kv.key())) + ": ";
        write_value(out, kv.value());
      }
      out += "}";
      return;
    }
    default:
      // Strings, integers, booleans and null serialize unambiguously.
      out += boost::json::serialize(v);
      return;
  }
}

std::string row_json(const Row& r) {
  std::string out = "{\"policy\": " + boost::json::serialize(boost::json::string(r.policy)) +
                    ", \"sessions\": " + std::to_string(r.sessions);
  for (const Column& c : columns()) {
    if (c.sparse && !c.get(r)) {
      continue;
    }
    out += fmt::format(", \"{}\": ", c.key);
    if (std::string_view(c.key) == "errors") {
      out += r.errors ? std::to_string(*r.errors) : "null";
    } else {
      out += json_number(c.get(r));
    }
  }
  return out + "}";
}

Result<std::optional<double>> read_number(const boost::json::object& o, const char* key) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr) {
    return std::string(fmt::format("row is missing \"{}\"", key));
  }
  if (v->is_null()) {
    return std::optional<double>{};
  }
  if (!v->is_number()) {
    return std::string(fmt::format("\"{}\" is not a number or null", key));
  }
  return std::optional<double>{v->to_number<double>()};
}

// Row is constructible from a string (C++20 aggregate), so errors are built explicitly.
Result<Row> row_error(std::string message) {
  return base::Failure{std::move(message)};
}

Result<Row> parse_row(const boost::json::value& v) {
  if (!v.is_object()) {
    return row_error("a row is not an object");
  }
  const boost::json::object& o = v.get_object();
  Row r;
  const boost::json::value* policy = o.if_contains("policy");
  if (policy == nullptr || !policy->is_string()) {
    return row_error("row \"policy\" must be a string");
  }
  r.policy = std::string(policy->get_string());
  const boost::json::value* sessions = o.if_contains("sessions");
  if (sessions == nullptr || !sessions->is_int64() || sessions->get_int64() < 0 ||
      sessions->get_int64() > 1'000'000) {
    return row_error("row \"sessions\" must be a non-negative integer");
  }
  r.sessions = static_cast<int>(sessions->get_int64());
  std::array<std::optional<double>*, 7> fields = {
      &r.sessions_per_hour, &r.output_tokens_per_min, &r.ttfb_p50,         &r.ttfb_p95,
      &r.replicas_busy,     &r.prefix_hits,           &r.stayed_on_replica};
  for (std::size_t j = 0; j < fields.size(); ++j) {
    auto n = read_number(o, columns()[j].key);
    if (!n) {
      return row_error(n.error());
    }
    *fields[j] = *n;
  }
  // The task columns came later: a report without them reads as one without tasks.
  std::array<std::optional<double>*, 3> task_fields = {&r.tasks_per_hour, &r.task_time_p50, &r.task_time_p95};
  for (std::size_t j = 0; j < task_fields.size(); ++j) {
    const char* key = columns()[kErrorsColumn + 1 + j].key;
    if (o.if_contains(key) == nullptr) {
      continue;
    }
    auto n = read_number(o, key);
    if (!n) {
      return row_error(n.error());
    }
    *task_fields[j] = *n;
  }
  if (o.if_contains(columns()[kExpectedColumn].key) != nullptr) {
    auto n = read_number(o, columns()[kExpectedColumn].key);
    if (!n) {
      return row_error(n.error());
    }
    r.expected_cached = *n;
  }
  const boost::json::value* errors = o.if_contains("errors");
  if (errors == nullptr) {
    return row_error("row is missing \"errors\"");
  }
  if (errors->is_int64()) {
    r.errors = errors->get_int64();
  } else if (errors->is_uint64()) {
    r.errors = static_cast<std::int64_t>(errors->get_uint64());
  } else if (!errors->is_null()) {
    return row_error("\"errors\" must be an integer or null");
  }
  return r;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string to_json(const Report& report) {
  std::string out = "{\"rows\": [";
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    out += i == 0 ? "\n  " : ",\n  ";
    out += row_json(report.rows[i]);
  }
  out += report.rows.empty() ? "],\n" : "\n],\n";
  if (!report.timeline.empty()) {
    out += "\"timeline\": ";
    write_value(out, timeline_json(report.timeline));
    out += ",\n";
  }
  out += "\"meta\": ";
  write_value(out, report.meta);
  out += "}\n";
  return out;
}

Result<Report> parse_json(std::string_view text) {
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(text, ec);
  if (ec) {
    return std::string("not JSON: " + ec.message());
  }
  if (!doc.is_object()) {
    return std::string("report is not a JSON object");
  }
  const boost::json::value* rows = doc.get_object().if_contains("rows");
  if (rows == nullptr || !rows->is_array()) {
    return std::string("report has no \"rows\" array");
  }
  Report report;
  for (const auto& v : rows->get_array()) {
    auto row = parse_row(v);
    if (!row) {
      return row.error();
    }
    report.rows.push_back(std::move(*row));
  }
  if (const boost::json::value* meta = doc.get_object().if_contains("meta");
      meta != nullptr && meta->is_object()) {
    report.meta = meta->get_object();
  }
  return report;
}

std::string to_csv(const std::vector<Row>& rows) {
  std::string out = "policy,sessions";
  const bool everything = true;  // CSV keeps the task columns (empty cells) but not an absent sparse one
  for (const Column& c : columns()) {
    if (shown(c, rows, everything)) {
      out += fmt::format(",{}", c.key);
    }
  }
  out += "\n";
  for (const Row& r : rows) {
    std::string policy = r.policy;
    if (policy.find_first_of(",\"\n") != std::string::npos) {
      std::string quoted = "\"";
      for (char ch : policy) {
        quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      }
      policy = quoted + "\"";
    }
    out += policy + "," + std::to_string(r.sessions);
    for (const Column& c : columns()) {
      if (shown(c, rows, everything)) {
        const std::string v = json_number(c.get(r));
        out += "," + (v == "null" ? std::string() : v);
      }
    }
    out += "\n";
  }
  return out;
}

std::string to_markdown(const std::vector<Row>& rows) {
  return grid_markdown(single_grid(rows, false));
}

std::string to_terminal(const std::vector<Row>& rows) {
  return grid_terminal(single_grid(rows, true));
}

std::optional<std::string> render_for_path(std::string_view path, const Report& report) {
  if (ends_with(path, ".json")) {
    return to_json(report);
  }
  if (ends_with(path, ".csv")) {
    return to_csv(report.rows);
  }
  if (ends_with(path, ".md")) {
    return report.timeline.empty() ? to_markdown(report.rows)
                                   : to_markdown(report.rows) + "\n" + timeline_markdown(report.timeline);
  }
  return std::nullopt;
}

std::vector<ComparisonRow> pair_rows(const std::vector<Row>& rows, std::string_view a, std::string_view b) {
  std::vector<ComparisonRow> out;
  auto slot = [&out](int sessions) -> ComparisonRow& {
    for (ComparisonRow& p : out) {
      if (p.sessions == sessions) {
        return p;
      }
    }
    out.push_back(ComparisonRow{sessions, std::nullopt, std::nullopt});
    return out.back();
  };
  for (const Row& r : rows) {
    if (r.policy == a) {
      slot(r.sessions).a = r;
    } else if (r.policy == b) {
      slot(r.sessions).b = r;
    }
  }
  return out;
}

std::string comparison_markdown(const std::vector<Row>& rows, std::string_view a, std::string_view b) {
  return grid_markdown(comparison_grid(rows, a, b, false));
}

std::string comparison_terminal(const std::vector<Row>& rows, std::string_view a, std::string_view b) {
  // Compact headers; the caption says what the arrows compare.
  return fmt::format("cells: {} → {}\n", a, b) + grid_terminal(comparison_grid(rows, a, b, true));
}

}  // namespace warden::report
