#include "report/svg.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "report/grid.hpp"

namespace warden::report {

namespace {

constexpr std::array<const char*, 6> kColours = {"#d95f02", "#1b9e77", "#7570b3",
                                                 "#e7298a", "#66a61e", "#e6ab02"};

struct Frame {
  double left, top, right, bottom;  // plot area in pixels
  double log_min, log_max;          // decades shown on y
  std::vector<int> levels;          // x categories

  double x(int sessions) const {
    const auto it = std::find(levels.begin(), levels.end(), sessions);
    const auto i = static_cast<double>(it - levels.begin());
    const double n = static_cast<double>(levels.size());
    return left + (right - left) * (i + 0.5) / n;
  }
  double y(double value) const {
    const double t = (std::log10(value) - log_min) / (log_max - log_min);
    return bottom - (bottom - top) * t;
  }
};

std::optional<double> stat_of(const Row& r, bool p95) {
  return p95 ? r.ttfb_p95 : r.ttfb_p50;
}

bool plottable(const std::optional<double>& v) {
  return v && std::isfinite(*v) && *v > 0.0;
}

void draw_axes(std::string& out, const Frame& f) {
  // Horizontal grid at 1, 2, 5 x each decade; labels on every line.
  for (int d = static_cast<int>(f.log_min); d <= static_cast<int>(f.log_max); ++d) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, d);
      const double lv = std::log10(v);
      if (lv < f.log_min - 1e-9 || lv > f.log_max + 1e-9) {
        continue;
      }
      const double y = f.y(v);
      out += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
          "stroke-width=\"1\"/>\n",
          f.left, y, f.right, y, m == 1.0 ? "#bbbbbb" : "#e5e5e5");
      out += fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"11\" fill=\"#333\">{}</text>\n",
          f.left - 6, y + 4, format_trimmed(v, 3));
    }
  }
  out += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>\n"
      "<line x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{3:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>\n",
      f.left, f.top, f.bottom, f.right);
  for (int level : f.levels) {
    const double x = f.x(level);
    out +=
        fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>\n",
                    x, f.bottom, f.bottom + 5);
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333\">{}</text>\n",
        x, f.bottom + 18, level);
  }
  out += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\">Sessions "
      "(concurrent "
      "agent conversations)</text>\n",
      (f.left + f.right) / 2, f.bottom + 36);
  out += fmt::format(
      "<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"middle\" font-size=\"12\" fill=\"#333\" "
      "transform=\"rotate(-90 {0:.1f} {1:.1f})\">TTFB (s, log scale)</text>\n",
      f.left - 48, (f.top + f.bottom) / 2);
}

void draw_series(std::string& out, const Frame& f, const std::vector<Row>& rows, const std::string& policy,
                 const char* colour, bool p95) {
  std::vector<const Row*> mine;
  for (const Row& r : rows) {
    if (r.policy == policy) {
      mine.push_back(&r);
    }
  }
  std::sort(mine.begin(), mine.end(), [](const Row* a, const Row* b) { return a->sessions < b->sessions; });
  std::string d;
  bool pen_down = false;
  std::string marks;
  for (const Row* r : mine) {
    const std::optional<double> v = stat_of(*r, p95);
    if (!plottable(v)) {
      pen_down = false;
      continue;
    }
    const double x = f.x(r->sessions);
    const double y = f.y(*v);
    d += fmt::format("{}{:.1f} {:.1f} ", pen_down ? "L" : "M", x, y);
    pen_down = true;
    if (p95) {
      marks += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"7\" height=\"7\" fill=\"{}\"/>\n",
                           x - 3.5, y - 3.5, colour);
    } else {
      marks += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n", x, y, colour);
    }
  }
  if (!d.empty()) {
    d.pop_back();
  }
  out += fmt::format(
      "<path class=\"series\" data-policy=\"{}\" data-stat=\"{}\" d=\"{}\" fill=\"none\" stroke=\"{}\" "
      "stroke-width=\"2\"{}/>\n",
      xml_escape(policy), p95 ? "p95" : "p50", d, colour, p95 ? " stroke-dasharray=\"6 4\"" : "");
  out += marks;
}

}  // namespace

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ttfb_svg(const std::vector<Row>& rows, const SvgOptions& options) {
  std::vector<std::string> policies;
  Frame f{};
  double lo = 0.0;
  double hi = 0.0;
  bool any = false;
  for (const Row& r : rows) {
    if (std::find(policies.begin(), policies.end(), r.policy) == policies.end()) {
      policies.push_back(r.policy);
    }
    if (std::find(f.levels.begin(), f.levels.end(), r.sessions) == f.levels.end()) {
      f.levels.push_back(r.sessions);
    }
    for (bool p95 : {false, true}) {
      const std::optional<double> v = stat_of(r, p95);
      if (plottable(v)) {
        lo = any ? std::min(lo, *v) : *v;
        hi = any ? std::max(hi, *v) : *v;
        any = true;
      }
    }
  }
  std::sort(f.levels.begin(), f.levels.end());
  if (!any) {
    lo = 0.1;
    hi = 10.0;
  }
  f.log_min = std::floor(std::log10(lo));
  f.log_max = std::ceil(std::log10(hi));
  if (f.log_max <= f.log_min) {
    f.log_max = f.log_min + 1;
  }
  const double legend_height = 22.0 * static_cast<double>(std::max<std::size_t>(policies.size(), 1));
  f.left = 70;
  f.top = 40 + legend_height;
  f.right = options.width - 20.0;
  f.bottom = options.height - 50.0;

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\">\n",
      options.width, options.height);
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n", options.width,
                     options.height);
  out += fmt::format(
      "<text x=\"{:.1f}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\" "
      "fill=\"#111\">{}</text>\n",
      options.width / 2.0, xml_escape(options.title));
  draw_axes(out, f);
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const char* colour = kColours[i % kColours.size()];
    draw_series(out, f, rows, policies[i], colour, false);
    draw_series(out, f, rows, policies[i], colour, true);
    // Legend: one line per policy with both line styles.
    const double ly = 40.0 + 22.0 * static_cast<double>(i);
    out += fmt::format(
        "<g class=\"legend\"><line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" "
        "stroke=\"{3}\" "
        "stroke-width=\"2\"/><text x=\"{4:.1f}\" y=\"{5:.1f}\" font-size=\"12\" fill=\"#111\">{6} p50</text>"
        "<line x1=\"{7:.1f}\" y1=\"{1:.1f}\" x2=\"{8:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"2\" "
        "stroke-dasharray=\"6 4\"/><text x=\"{9:.1f}\" y=\"{5:.1f}\" font-size=\"12\" fill=\"#111\">{6} "
        "p95</text></g>\n",
        f.left + 10, ly, f.left + 40, colour, f.left + 46, ly + 4, xml_escape(policies[i]), f.left + 200,
        f.left + 230, f.left + 236);
  }
  out += "</svg>\n";
  return out;
}

}  // namespace warden::report
