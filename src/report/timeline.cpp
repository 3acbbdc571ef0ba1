#include "report/timeline.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "report/grid.hpp"
#include "report/svg.hpp"

namespace warden::report {

namespace {

std::string cell(const std::optional<double>& v, int decimals) {
  return v && std::isfinite(*v) ? format_trimmed(*v, decimals) : std::string("–");
}

Grid timeline_grid(const std::vector<TimelinePoint>& points) {
  Grid grid{{"Policy", "Sessions", "Minutes", "Prefix hits (%)", "Tasks/h", "Requests"}};
  for (const TimelinePoint& p : points) {
    grid.push_back({p.policy, std::to_string(p.sessions),
                    format_trimmed(p.from / 60.0, 1) + "-" + format_trimmed(p.to / 60.0, 1),
                    cell(p.prefix_hits, 1), cell(p.tasks_per_hour, 0), std::to_string(p.requests)});
  }
  return grid;
}

constexpr std::array<const char*, 8> kColours = {"#d95f02", "#1b9e77", "#7570b3", "#e7298a",
                                                 "#66a61e", "#e6ab02", "#a6761d", "#666666"};

struct Panel {
  double left, top, right, bottom;
  double x_max, y_max;
  double x(double minutes) const { return left + (right - left) * minutes / x_max; }
  double y(double value) const { return bottom - (bottom - top) * std::clamp(value / y_max, 0.0, 1.0); }
};

// A round axis top at or above `v`: 1, 2 or 5 times a power of ten.
double nice_ceiling(double v) {
  if (!(v > 0)) {
    return 1.0;
  }
  const double decade = std::pow(10.0, std::floor(std::log10(v)));
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * decade >= v - 1e-9) {
      return m * decade;
    }
  }
  return 10.0 * decade;
}

void draw_frame(std::string& out, const Panel& p, const std::string& label) {
  for (int i = 0; i <= 4; ++i) {
    const double v = p.y_max * i / 4.0;
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e5e5e5\"/>\n"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"11\" fill=\"#333\">{}</text>\n",
        p.left, p.y(v), p.right, p.y(v), p.left - 6, p.y(v) + 4, format_trimmed(v, 0));
  }
  for (int i = 0; i <= 6; ++i) {
    const double m = p.x_max * i / 6.0;
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333\">{}</text>\n",
        p.x(m), p.bottom + 16, format_trimmed(m, 0));
  }
  out += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>\n"
      "<line x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{3:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>\n"
      "<text x=\"{4:.1f}\" y=\"{5:.1f}\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\" "
      "transform=\"rotate(-90 {4:.1f} {5:.1f})\">{6}</text>\n",
      p.left, p.top, p.bottom, p.right, p.left - 44, (p.top + p.bottom) / 2, label);
}

using Series = std::pair<std::string, int>;  // policy, sessions

void draw_series(std::string& out, const Panel& p, const std::vector<TimelinePoint>& points, const Series& s,
                 const char* colour, bool tasks) {
  std::string d;
  bool pen_down = false;
  for (const TimelinePoint& t : points) {
    if (t.policy != s.first || t.sessions != s.second) {
      continue;
    }
    const std::optional<double> v = tasks ? t.tasks_per_hour : t.prefix_hits;
    if (!v || !std::isfinite(*v)) {
      pen_down = false;
      continue;
    }
    d += fmt::format("{}{:.1f} {:.1f} ", pen_down ? "L" : "M", p.x((t.from + t.to) / 120.0), p.y(*v));
    pen_down = true;
  }
  if (!d.empty()) {
    d.pop_back();
  }
  out += fmt::format(
      "<path class=\"series\" data-policy=\"{}\" data-sessions=\"{}\" data-stat=\"{}\" d=\"{}\" "
      "fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n",
      xml_escape(s.first), s.second, tasks ? "tasks" : "hits", d, colour);
}

}  // namespace

std::optional<double> hit_percent(double hits, double queries) {
  if (!(queries > 0)) {
    return std::nullopt;
  }
  return 100.0 * hits / queries;
}

std::string timeline_markdown(const std::vector<TimelinePoint>& points) {
  return grid_markdown(timeline_grid(points));
}

std::string timeline_terminal(const std::vector<TimelinePoint>& points) {
  return grid_terminal(timeline_grid(points));
}

boost::json::array timeline_json(const std::vector<TimelinePoint>& points) {
  boost::json::array out;
  for (const TimelinePoint& p : points) {
    boost::json::object o;
    o["policy"] = p.policy;
    o["sessions"] = p.sessions;
    o["from_s"] = p.from;
    o["to_s"] = p.to;
    o["prefix_hits"] = p.prefix_hits ? boost::json::value(*p.prefix_hits) : boost::json::value(nullptr);
    o["tasks_per_hour"] =
        p.tasks_per_hour ? boost::json::value(*p.tasks_per_hour) : boost::json::value(nullptr);
    o["requests"] = p.requests;
    out.emplace_back(std::move(o));
  }
  return out;
}

std::string timeline_svg(const std::vector<TimelinePoint>& points, const std::string& title) {
  constexpr int width = 760;
  constexpr int height = 620;
  std::vector<Series> series;
  double x_max = 1.0;
  double tasks_max = 0.0;
  for (const TimelinePoint& t : points) {
    if (std::find(series.begin(), series.end(), Series{t.policy, t.sessions}) == series.end()) {
      series.emplace_back(t.policy, t.sessions);
    }
    x_max = std::max(x_max, t.to / 60.0);
    tasks_max = std::max(tasks_max, t.tasks_per_hour.value_or(0.0));
  }
  const double legend = 18.0 * static_cast<double>((series.size() + 2) / 3);
  const double top = 40.0 + legend;
  const double mid = top + (height - top - 40.0) / 2.0;
  const Panel hits{70, top, width - 20.0, mid - 30, x_max, 100.0};
  const Panel tasks{70, mid + 10, width - 20.0, height - 40.0, x_max, nice_ceiling(tasks_max)};
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\">\n<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2:.1f}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\" "
      "fill=\"#111\">{3}</text>\n",
      width, height, width / 2.0, xml_escape(title));
  draw_frame(out, hits, "Prefix hits (%)");
  draw_frame(out, tasks, "Tasks/h");
  out += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\">Minutes since "
      "the level's start</text>\n",
      (tasks.left + tasks.right) / 2, tasks.bottom + 32);
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* colour = kColours[i % kColours.size()];
    draw_series(out, hits, points, series[i], colour, false);
    draw_series(out, tasks, points, series[i], colour, true);
    const double lx = 80.0 + 220.0 * static_cast<double>(i % 3);
    const double ly = 40.0 + 18.0 * static_cast<double>(i / 3);
    out += fmt::format(
        "<g class=\"legend\"><line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" "
        "stroke=\"{3}\" "
        "stroke-width=\"2\"/><text x=\"{4:.1f}\" y=\"{5:.1f}\" font-size=\"12\" fill=\"#111\">{6} at "
        "{7}</text></g>\n",
        lx, ly, lx + 24, colour, lx + 30, ly + 4, xml_escape(series[i].first), series[i].second);
  }
  out += "</svg>\n";
  return out;
}

}  // namespace warden::report
