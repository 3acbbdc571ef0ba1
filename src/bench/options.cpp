#include "bench/options.hpp"

#include <fmt/core.h>

#include <cmath>

#include "base/parse.hpp"
#include "base/trim.hpp"

namespace warden::bench {

namespace {

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t comma = text.find(',');
    parts.push_back(base::trim(text.substr(0, comma), " "));
    if (comma == std::string_view::npos) {
      return parts;
    }
    text.remove_prefix(comma + 1);
  }
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Result<double> parse_duration(std::string_view text) {
  text = base::trim(text, " ");
  const auto seconds = base::parse_seconds(text);
  if (!seconds || !(*seconds > 0.0)) {
    return std::string(fmt::format("duration '{}' must be a positive number with an optional unit ms/s/m/h",
                                   base::split_seconds_unit(text).first));
  }
  return *seconds;
}

Result<std::vector<int>> parse_levels(std::string_view text) {
  std::vector<int> levels;
  for (std::string_view part : split_commas(text)) {
    const auto v = base::parse_integer<int>(part, 1, 10000);
    if (!v) {
      return std::string(fmt::format("level '{}' must be an integer from 1 to 10000", part));
    }
    levels.push_back(*v);
  }
  return levels;
}

Result<std::vector<std::string>> parse_compare(std::string_view text) {
  std::vector<std::string> labels;
  for (std::string_view part : split_commas(text)) {
    if (part != "off" && part != "on") {
      return std::string(fmt::format("--compare takes affinity settings 'off' and 'on', not '{}'", part));
    }
    labels.emplace_back(part);
  }
  if (labels.size() != 2 || labels[0] == labels[1]) {
    return std::string("--compare takes two settings, e.g. off,on");
  }
  return labels;
}

Result<Api> parse_api(std::string_view text) {
  if (text == "anthropic") {
    return Api::anthropic;
  }
  if (text == "openai") {
    return Api::openai;
  }
  return std::string(fmt::format("--api must be anthropic or openai, not '{}'", text));
}

Result<StayedBy> parse_stayed_by(std::string_view text) {
  if (text == "route") {
    return StayedBy::route;
  }
  if (text == "replica") {
    return StayedBy::replica;
  }
  return std::string(fmt::format("--stayed-by must be route or replica, not '{}'", text));
}

Result<std::vector<std::string>> parse_urls(const std::vector<std::string>& given, std::string_view flag) {
  std::vector<std::string> urls;
  std::vector<std::string_view> seen;
  for (const std::string& occurrence : given) {
    for (std::string_view url : split_commas(occurrence)) {
      if (url.empty()) {
        return std::string(fmt::format("{} has an empty URL in '{}'", flag, occurrence));
      }
      std::string_view bare = url;
      while (bare.size() > 1 && bare.back() == '/') {
        bare.remove_suffix(1);
      }
      for (std::string_view other : seen) {
        if (other == bare) {
          return std::string(fmt::format("{} names {} twice", flag, bare));
        }
      }
      seen.push_back(bare);
      urls.emplace_back(url);
    }
  }
  return urls;
}

std::size_t target_for(std::uint64_t session_index, std::size_t turn, std::size_t targets) {
  if (targets <= 1) {
    return 0;
  }
  return static_cast<std::size_t>((session_index + turn) % targets);
}

StayedBy stayed_by_for(const BenchOptions& o) {
  return o.stayed_by.value_or(o.urls.size() > 1 ? StayedBy::replica : StayedBy::route);
}

std::string_view stayed_by_name(StayedBy by) {
  return by == StayedBy::route ? "route" : "replica";
}

Result<void> validate(const BenchOptions& o) {
  if (o.urls.empty() || o.model.empty()) {
    return std::string("--url and --model are required");
  }
  if (o.levels.empty()) {
    return std::string("--levels needs at least one level");
  }
  if (!(o.duration > 0.0) || !(o.time_scale > 0.0) || !std::isfinite(o.time_scale)) {
    return std::string("--duration and --time-scale must be positive");
  }
  if (!o.compare.empty() && o.wardens.empty()) {
    return std::string("--compare needs --warden (affinity is toggled through its admin API)");
  }
  if (!o.compare.empty() && o.urls.size() > 1 && o.wardens.size() != o.urls.size()) {
    return std::string(
        "--compare over several --url targets needs one --warden per target (affinity is set "
        "on each)");
  }
  if (o.out && !ends_with(*o.out, ".json") && !ends_with(*o.out, ".csv") && !ends_with(*o.out, ".md")) {
    return std::string("--out must end in .json, .csv or .md");
  }
  if (o.baseline && !o.compare.empty()) {
    return std::string("--baseline is printed beside a single pass, not --compare");
  }
  if (o.baseline && !ends_with(*o.baseline, ".json")) {
    return std::string("--baseline takes a .json report (--out FILE.json of an earlier run)");
  }
  if (auto w = workload::validate(o.workload); !w) {
    return w.error();
  }
  return {};
}

std::vector<std::string> metrics_urls(const BenchOptions& o) {
  if (!o.metrics.empty()) {
    return o.metrics;
  }
  std::vector<std::string> urls;
  for (std::string base : o.urls) {
    while (!base.empty() && base.back() == '/') {
      base.pop_back();
    }
    urls.push_back(base + "/metrics");
  }
  return urls;
}

std::string routing_admin_path(std::string_view model) {
  std::string path = "/api/models/";
  for (unsigned char c : model) {
    const bool unreserved = std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
    path += unreserved ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return path + "/routing";
}

}  // namespace warden::bench
