#include "report/svg.hpp"

#include <gtest/gtest.h>

#include <regex>

#include "report/report.hpp"
#include "report/timeline.hpp"

namespace warden::report {
namespace {

// Minimal XML well-formedness: every tag closes in order, attributes are quoted, no stray '<' or '&'.
bool well_formed(const std::string& xml, std::string& why) {
  std::vector<std::string> stack;
  std::size_t i = 0;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      const std::size_t semi = xml.find(';', i);
      const std::string entity = xml.substr(i, semi == std::string::npos ? 0 : semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" &&
          entity != "&apos;") {
        why = "bad entity at " + std::to_string(i);
        return false;
      }
      i = semi + 1;
      continue;
    }
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    const std::size_t close = xml.find('>', i);
    if (close == std::string::npos) {
      why = "unterminated tag";
      return false;
    }
    std::string tag = xml.substr(i + 1, close - i - 1);
    i = close + 1;
    if (tag.find('<') != std::string::npos) {
      why = "'<' inside a tag";
      return false;
    }
    std::size_t quotes = 0;
    for (char c : tag) {
      quotes += c == '"' ? 1 : 0;
    }
    if (quotes % 2 != 0) {
      why = "unbalanced quotes in <" + tag + ">";
      return false;
    }
    if (tag.front() == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) {
        why = "mismatched </" + tag.substr(1) + ">";
        return false;
      }
      stack.pop_back();
    } else if (tag.back() != '/') {
      stack.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
  }
  if (!stack.empty()) {
    why = "unclosed <" + stack.back() + ">";
    return false;
  }
  return true;
}

struct Series {
  std::vector<std::pair<double, double>> points;
};

Series series(const std::string& svg, const std::string& policy, const std::string& stat) {
  const std::regex path("<path class=\"series\" data-policy=\"" + policy + "\" data-stat=\"" + stat +
                        "\" d=\"([^\"]*)\"");
  std::smatch m;
  Series s;
  if (!std::regex_search(svg, m, path)) {
    return s;
  }
  const std::string d = m[1];
  const std::regex point("[ML]([0-9.]+) ([0-9.]+)");
  for (auto it = std::sregex_iterator(d.begin(), d.end(), point); it != std::sregex_iterator(); ++it) {
    s.points.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  }
  return s;
}

TEST(Svg, ReferenceChartIsWellFormedWithFourSeriesOfFiveLevels) {
  const std::string svg = ttfb_svg(reference_rows());
  std::string why;
  EXPECT_TRUE(well_formed(svg, why)) << why;
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0U);
  for (const char* policy : {"off", "on"}) {
    for (const char* stat : {"p50", "p95"}) {
      EXPECT_EQ(series(svg, policy, stat).points.size(), 5U) << policy << " " << stat;
    }
    EXPECT_NE(svg.find(std::string(">") + policy + " p50</text>"), std::string::npos);  // legend
  }
  EXPECT_NE(svg.find("TTFB (s, log scale)"), std::string::npos);
  EXPECT_NE(svg.find("Sessions"), std::string::npos);
}

TEST(Svg, YAxisIsLogarithmic) {
  // 0.1, 1 and 10 s at three levels: equal pixel steps per decade.
  std::vector<Row> rows;
  const double values[] = {0.1, 1.0, 10.0};
  for (int i = 0; i < 3; ++i) {
    Row r;
    r.policy = "a";
    r.sessions = 4 << i;
    r.ttfb_p50 = values[i];
    r.ttfb_p95 = values[i] * 2;
    rows.push_back(r);
  }
  const std::string svg = ttfb_svg(rows);
  const Series p50 = series(svg, "a", "p50");
  ASSERT_EQ(p50.points.size(), 3U);
  const double step1 = p50.points[0].second - p50.points[1].second;
  const double step2 = p50.points[1].second - p50.points[2].second;
  EXPECT_GT(step1, 10.0);
  EXPECT_NEAR(step1, step2, 0.2);
  // x increases with the level; p95 is drawn above p50 (smaller y).
  EXPECT_LT(p50.points[0].first, p50.points[1].first);
  const Series p95 = series(svg, "a", "p95");
  ASSERT_EQ(p95.points.size(), 3U);
  EXPECT_LT(p95.points[0].second, p50.points[0].second);
}

TEST(Svg, MissingValuesLeaveGapsAndNamesAreEscaped) {
  std::vector<Row> rows = {
      Row{"a<b&c", 4, 1, 1, 0.5, 1.0, 1, 1, 1, 0},
      Row{"a<b&c", 8, 1, 1, std::nullopt, 2.0, 1, 1, 1, 0},
      Row{"a<b&c", 16, 1, 1, 0.0, 3.0, 1, 1, 1, 0},
  };
  const std::string svg = ttfb_svg(rows);
  std::string why;
  EXPECT_TRUE(well_formed(svg, why)) << why;
  EXPECT_EQ(series(svg, "a&lt;b&amp;c", "p50").points.size(), 1U);
  EXPECT_EQ(series(svg, "a&lt;b&amp;c", "p95").points.size(), 3U);
  // An empty report still draws a valid (empty) chart.
  EXPECT_TRUE(well_formed(ttfb_svg({}), why)) << why;
}

// A level whose hit rate falls from 81 % to 28 % over four five-minute intervals while its tasks/h fall too.
std::vector<TimelinePoint> falling(const std::string& policy = "session-hash") {
  std::vector<TimelinePoint> out;
  const double hits[] = {81, 60, 40, 28};
  const double tasks[] = {200, 150, 120, 100};
  for (int i = 0; i < 4; ++i) {
    out.push_back({policy, 26, 300.0 * i, 300.0 * (i + 1), hits[i], tasks[i], 100});
  }
  return out;
}

TEST(Timeline, ChartDrawsEachLevelsCourseInTwoPanels) {
  std::vector<TimelinePoint> points = falling();
  const std::vector<TimelinePoint> other = falling("a<b");
  points.insert(points.end(), other.begin(), other.end());
  const std::string svg = timeline_svg(points, "seed 1");
  std::string why;
  ASSERT_TRUE(well_formed(svg, why)) << why;
  const std::regex hits_path(
      "<path class=\"series\" data-policy=\"session-hash\" data-sessions=\"26\" data-stat=\"hits\" "
      "d=\"([^\"]*)\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, hits_path));
  const std::string d = m[1];
  const std::regex point("[ML]([0-9.]+) ([0-9.]+)");
  std::vector<std::pair<double, double>> xy;
  for (auto it = std::sregex_iterator(d.begin(), d.end(), point); it != std::sregex_iterator(); ++it) {
    xy.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  }
  ASSERT_EQ(xy.size(), 4U);
  for (std::size_t i = 1; i < xy.size(); ++i) {
    EXPECT_GT(xy[i].first, xy[i - 1].first) << "time runs left to right";
    EXPECT_GT(xy[i].second, xy[i - 1].second) << "a falling hit rate is drawn lower";
  }
  EXPECT_NE(svg.find("data-stat=\"tasks\""), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b at 26"), std::string::npos) << "names are escaped in the legend";
}

TEST(Timeline, TablesHaveARowPerIntervalAndTheJsonOnlyWhenThereIsOne) {
  std::vector<TimelinePoint> points = falling();
  points[3].tasks_per_hour.reset();  // a workload without tasks
  const std::string md = timeline_markdown(points);
  EXPECT_NE(md.find("| session-hash | 26 | 0-5 | 81 | 200 | 100 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 15-20 | 28 | – |"), std::string::npos) << md;
  Report with{{}, {}, points};
  const std::string json = to_json(with);
  EXPECT_NE(json.find(R"("timeline": [{"policy": "session-hash")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("tasks_per_hour": null)"), std::string::npos);
  EXPECT_EQ(to_json(Report{}).find("timeline"), std::string::npos) << "no timeline, no key: rows unchanged";
  EXPECT_NE(render_for_path("x.md", with)->find("| Minutes |"), std::string::npos);
  EXPECT_EQ(hit_percent(5, 0), std::nullopt);
  EXPECT_DOUBLE_EQ(*hit_percent(1, 4), 25.0);
}

}  // namespace
}  // namespace warden::report
