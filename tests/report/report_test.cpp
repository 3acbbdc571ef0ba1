#include "report/report.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <sstream>

namespace warden::report {
namespace {

Row sample_row() {
  return Row{"on", 8, 380.0, 10752.25, 0.48, 5.03, 3.74, 86.1, std::nullopt, 2};
}

TEST(ReportJson, SchemaHasExactlyTheStableKeysInOrder) {
  Report r;
  r.rows = {sample_row()};
  r.meta["tool"] = "lm-warden bench";
  r.meta["time_scale"] = 10.0;
  const std::string text = to_json(r);
  const boost::json::value doc = boost::json::parse(text);
  const boost::json::object& row = doc.at("rows").as_array().at(0).as_object();
  std::vector<std::string> keys;
  for (const auto& kv : row) {
    keys.emplace_back(kv.key());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"policy", "sessions", "sessions_per_hour",
                                            "output_tokens_per_min", "ttfb_p50", "ttfb_p95", "replicas_busy",
                                            "prefix_hits", "stayed_on_replica", "errors", "tasks_per_hour",
                                            "task_time_p50", "task_time_p95"}));
  EXPECT_TRUE(row.at("tasks_per_hour").is_null());
  EXPECT_TRUE(row.at("stayed_on_replica").is_null());
  EXPECT_EQ(row.at("errors").as_int64(), 2);
  EXPECT_EQ(doc.at("meta").at("tool").as_string(), "lm-warden bench");
  // Doubles are written as plain decimals, not Boost.JSON's "1E1".
  EXPECT_NE(text.find("\"time_scale\": 10"), std::string::npos) << text;
}

TEST(ReportJson, RoundTripsWithNulls) {
  Report r;
  r.rows = {sample_row(), Row{"off", 4, std::nullopt, 0.0, std::nullopt, std::nullopt, std::nullopt,
                              std::nullopt, std::nullopt, std::nullopt}};
  r.meta["seed"] = 1;
  auto back = parse_json(to_json(r));
  ASSERT_TRUE(back.has_value()) << back.error();
  ASSERT_EQ(back->rows.size(), 2U);
  EXPECT_EQ(back->rows[0], sample_row());
  EXPECT_EQ(back->rows[1], r.rows[1]);
  EXPECT_EQ(back->meta.at("seed").as_int64(), 1);
}

TEST(ReportJson, RoundsToFourDecimalsAndWritesNonFiniteAsNull) {
  Report r;
  Row row = sample_row();
  row.ttfb_p50 = 0.123456789;
  row.ttfb_p95 = std::numeric_limits<double>::infinity();
  r.rows = {row};
  auto back = parse_json(to_json(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_DOUBLE_EQ(*back->rows[0].ttfb_p50, 0.1235);
  EXPECT_FALSE(back->rows[0].ttfb_p95.has_value());
}

TEST(ReportJson, RejectsMalformedReports) {
  EXPECT_FALSE(parse_json("not json").has_value());
  EXPECT_FALSE(parse_json("[]").has_value());
  EXPECT_FALSE(parse_json(R"({"rows": [{"policy": 1}]})").has_value());
  EXPECT_FALSE(parse_json(R"({"rows": [{"policy": "a", "sessions": -1}]})").has_value());
  EXPECT_FALSE(
      parse_json(R"({"rows": [{"policy": "a", "sessions": 4, "sessions_per_hour": "x"}]})").has_value());
  EXPECT_TRUE(parse_json(R"({"rows": []})").has_value());
}

TEST(ReportCsv, HeaderIsTheJsonKeysAndNullsAreEmpty) {
  Row row = sample_row();
  row.policy = "a,b";
  const std::string csv = to_csv({row});
  std::istringstream in(csv);
  std::string header;
  std::string line;
  std::getline(in, header);
  std::getline(in, line);
  EXPECT_EQ(
      header,
      "policy,sessions,sessions_per_hour,output_tokens_per_min,ttfb_p50,ttfb_p95,replicas_busy,prefix_hits,"
      "stayed_on_replica,errors,tasks_per_hour,task_time_p50,task_time_p95");
  EXPECT_EQ(line, "\"a,b\",8,380,10752.25,0.48,5.03,3.74,86.1,,2,,,");
}

TEST(ReportJson, TaskColumnsRoundTripAndOlderReportsReadWithoutThem) {
  Report r;
  Row agents = sample_row();
  agents.tasks_per_hour = 120.5;
  agents.task_time_p50 = 31.3;
  agents.task_time_p95 = 80.0;
  r.rows = {agents};
  auto back = parse_json(to_json(r));
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(back->rows.at(0), agents);
  // A report written before the task columns existed.
  const std::string older =
      R"({"rows": [{"policy": "on", "sessions": 8, "sessions_per_hour": 380, "output_tokens_per_min": 1,)"
      R"( "ttfb_p50": 0.5, "ttfb_p95": 5, "replicas_busy": 3, "prefix_hits": 86, "stayed_on_replica": null,)"
      R"( "errors": 2}], "meta": {}})";
  auto old_rows = parse_json(older);
  ASSERT_TRUE(old_rows.has_value()) << old_rows.error();
  EXPECT_FALSE(old_rows->rows.at(0).tasks_per_hour.has_value());
  // Tables show the task columns only when some row has them.
  EXPECT_EQ(to_markdown({sample_row()}).find("Tasks/h"), std::string::npos);
  const std::string md = to_markdown({agents});
  EXPECT_NE(md.find("| Tasks/h | Task p50 (s) | Task p95 (s) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 121 | 31.3 | 80 |"), std::string::npos) << md;
  EXPECT_NE(comparison_markdown({agents, Row{"off", 8}}, "off", "on").find("Tasks/h off → on"),
            std::string::npos);
}

TEST(ReportMarkdown, OneRowPerPolicyAndLevel) {
  const std::string md = to_markdown({sample_row()});
  EXPECT_EQ(
      md,
      "| Policy | Sessions | Sessions/h | Output tokens/min | TTFB p50 (s) | TTFB p95 (s) | Replicas busy | "
      "Prefix hits (%) | Stayed on replica (%) | Errors |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n"
      "| on | 8 | 380 | 10,752 | 0.48 | 5.03 | 3.74 | 86.1 | n/a | 2 |\n");
}

// The comparison layout reproduces routing.md's reference table exactly from the reference data.
TEST(ReportComparison, ReferenceDataPrintsAsTheReferenceTable) {
  const std::string expected =
      "| Sessions | Sessions/h off → on | Output tokens/min off → on | TTFB p50 off → on (s) | TTFB p95 off "
      "→ on "
      "(s) | Replicas busy off → on | Prefix hits off → on (%) | Stayed on replica (%) |\n"
      "|---|---|---|---|---|---|---|---|\n"
      "| 4 | 180 → 240 | 5,886 → 6,744 | 2.05 → 0.38 | 3.5 → 2.84 | 2.71 → 2.83 | 56.2 → 86.4 | 100 |\n"
      "| 8 | 300 → 380 | 8,364 → 10,752 | 2.33 → 0.48 | 6.32 → 5.03 | 3.74 → 3.74 | 44.3 → 86.1 | 100 |\n"
      "| 16 | 300 → 360 | 9,558 → 12,204 | 3.25 → 0.85 | 26.24 → 24.88 | 3.91 → 3.69 | 33.2 → 48.6 | 100 |\n"
      "| 24 | 300 → 420 | 9,048 → 11,178 | 5.06 → 13.14 | 58.82 → 38.34 | 3.91 → 4 | 32.8 → 37.9 | 89.1 |\n"
      "| 32 | 520 → 620 | 14,760 → 16,638 | 12.32 → 27.66 | 82.84 → 38.92 | 4 → 4 | 31.6 → 31.6 | 67.3 |\n";
  EXPECT_EQ(comparison_markdown(reference_rows(), "off", "on"), expected);
}

TEST(ReportComparison, AnyLabelsAndAnErrorsColumnWhenMeasured) {
  std::vector<Row> rows = {
      Row{"vllm-lb", 4, 100, 1000, 2, 3, 2.5, 50, 20, 0},
      Row{"affinity", 4, 120, 1200, 0.5, 1, 2.5, 80, 100, 1},
      Row{"affinity", 8, 150, 1500, 0.7, 2, 3, 70, 95, 0},
  };
  const std::string md = comparison_markdown(rows, "vllm-lb", "affinity");
  EXPECT_NE(md.find("| Sessions/h vllm-lb → affinity |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Stayed on replica vllm-lb → affinity (%) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Errors vllm-lb → affinity |"), std::string::npos) << md;
  EXPECT_NE(
      md.find("| 4 | 100 → 120 | 1,000 → 1,200 | 2 → 0.5 | 3 → 1 | 2.5 → 2.5 | 50 → 80 | 20 → 100 | 0 → 1 |"),
      std::string::npos)
      << md;
  // A level measured by one side only.
  EXPECT_NE(md.find("| 8 | n/a → 150 |"), std::string::npos) << md;
}

TEST(ReportTerminal, ColumnsAreAligned) {
  const std::string t = comparison_terminal(reference_rows(), "off", "on");
  std::istringstream in(t);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "cells: off → on");
  std::vector<std::size_t> widths;
  while (std::getline(in, line)) {
    std::size_t w = 0;
    for (unsigned char c : line) {
      w += (c & 0xC0U) != 0x80U ? 1 : 0;
    }
    widths.push_back(w);
  }
  ASSERT_EQ(widths.size(), 6U);
  for (std::size_t w : widths) {
    EXPECT_EQ(w, widths[0]);
  }
  EXPECT_NE(to_terminal(reference_rows()).find("off"), std::string::npos);
}

TEST(ReportFormat, NumbersAsInTheReferenceTable) {
  EXPECT_EQ(format_thousands(5886), "5,886");
  EXPECT_EQ(format_thousands(1234567.4), "1,234,567");
  EXPECT_EQ(format_thousands(999.5), "1,000");
  EXPECT_EQ(format_thousands(-1500), "-1,500");
  EXPECT_EQ(format_trimmed(3.5, 2), "3.5");
  EXPECT_EQ(format_trimmed(4.0, 2), "4");
  EXPECT_EQ(format_trimmed(0.384, 2), "0.38");
  EXPECT_EQ(format_trimmed(-0.001, 2), "0");
}

TEST(ReportRender, PicksTheFormatFromTheExtension) {
  Report r;
  r.rows = {sample_row()};
  EXPECT_EQ(render_for_path("x.json", r), to_json(r));
  EXPECT_EQ(render_for_path("dir/x.csv", r), to_csv(r.rows));
  EXPECT_EQ(render_for_path("x.md", r), to_markdown(r.rows));
  EXPECT_FALSE(render_for_path("x.txt", r).has_value());
}

}  // namespace
}  // namespace warden::report
