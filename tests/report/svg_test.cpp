#include "report/svg.hpp"

#include <gtest/gtest.h>

#include <regex>

#include "report/report.hpp"

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

}  // namespace
}  // namespace warden::report
