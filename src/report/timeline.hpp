// A level's course over time: the prefix hit rate and the agent tasks finished in each interval of the
// measuring window, so a fall within a level (caches that fill, then thrash) shows, not only its average.
// Pure: writers for the terminal, Markdown, JSON and an SVG chart.
#pragma once

#include <boost/json/array.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace warden::report {

struct TimelinePoint {
  std::string policy;
  int sessions = 0;
  double from = 0.0;  // seconds since the level's window began
  double to = 0.0;
  std::optional<double> prefix_hits;     // % of the interval's prompt tokens served from cache
  std::optional<double> tasks_per_hour;  // agent tasks whose final reply ended in the interval, per hour
  std::uint64_t requests = 0;            // requests that ended in the interval
};

// Hit rate of an interval from the deltas of the engines' counters: none when nothing was queried.
std::optional<double> hit_percent(double hits, double queries);

// One line per interval: policy, sessions, minutes (from-to), hits %, tasks/h, requests.
std::string timeline_markdown(const std::vector<TimelinePoint>& points);
std::string timeline_terminal(const std::vector<TimelinePoint>& points);
boost::json::array timeline_json(const std::vector<TimelinePoint>& points);

// Two panels over minutes since the level's start: prefix hits (%) and tasks/h, one series per (policy,
// sessions). Each series is a <path class="series"> with data-policy, data-sessions and data-stat
// ("hits"/"tasks") attributes.
std::string timeline_svg(const std::vector<TimelinePoint>& points, const std::string& title);

}  // namespace warden::report
