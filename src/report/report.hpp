// Writers for the reference table: JSON (stable schema, docs/bench.md), CSV, Markdown, a terminal table,
// the `off → on` comparison layout of routing.md, and the reference measurement itself as data
// (tables and number formatting: report/grid.hpp).
#pragma once

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "report/grid.hpp"
#include "report/row.hpp"
#include "report/timeline.hpp"

namespace warden::report {

using base::Result;

// What `--out x.json` holds: {"rows": [...], "meta": {...}}. `meta` is free-form (tool, command, workload,
// seed, time scale, ...); the row schema is the stable part.
struct Report {
  std::vector<Row> rows;
  boost::json::object meta;
  // `simulate --timeline`: each level's course per interval (written only when there is one).
  std::vector<TimelinePoint> timeline;
};

// Numbers are written rounded to 4 decimals; non-finite numbers and missing values are null.
std::string to_json(const Report& report);
Result<Report> parse_json(std::string_view text);

// Header = the JSON row keys; null cells are empty.
std::string to_csv(const std::vector<Row>& rows);

// One row per (policy, level): | Policy | Sessions | Sessions/h | ... | Errors |.
std::string to_markdown(const std::vector<Row>& rows);
// The same table aligned with spaces for a terminal.
std::string to_terminal(const std::vector<Row>& rows);

// Picks the writer from the file name's extension: .json, .csv or .md; none for anything else.
std::optional<std::string> render_for_path(std::string_view path, const Report& report);

// Rows of two policies paired by level (sessions), in order of first appearance.
struct ComparisonRow {
  int sessions = 0;
  std::optional<Row> a;
  std::optional<Row> b;
};
std::vector<ComparisonRow> pair_rows(const std::vector<Row>& rows, std::string_view a, std::string_view b);

// routing.md's layout: | Sessions | Sessions/h a → b | ... | Stayed on replica (%) |, cells "x → y".
// The stayed column shows only the non-null side when one side does not apply (as in the reference, where
// affinity off has no home replica). An Errors column is added when any row has an error count.
std::string comparison_markdown(const std::vector<Row>& rows, std::string_view a, std::string_view b);
std::string comparison_terminal(const std::vector<Row>& rows, std::string_view a, std::string_view b);

// The reference measurement of routing.md (4 x A4000, Qwen3-4B, DP 4) as rows with policies "off" and
// "on"; errors are null (not reported there).
const std::vector<Row>& reference_rows();

}  // namespace warden::report
