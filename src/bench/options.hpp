// Options of `lm-warden bench` and the parsing of their textual forms (pure helpers).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "workload/workload.hpp"

namespace warden::bench {

using base::Result;

enum class Api { anthropic, openai };

struct BenchOptions {
  std::string url;    // where the requests go: an engine, or a warden
  std::string model;  // the model name sent in every request (and the warden's model for --compare)
  Api api = Api::anthropic;
  std::vector<int> levels{4, 8, 16, 24, 32};
  double duration = 180.0;            // model seconds per level
  double time_scale = 1.0;            // model seconds per wall second (the simulator's --time-scale)
  std::optional<std::string> warden;  // warden base URL: admin API for --compare
  std::vector<std::string> metrics;   // engines' /metrics URLs; empty = {url}/metrics
  std::vector<std::string> compare;   // {"off","on"}: affinity per pass, toggled through the admin API
  std::string label = "run";          // policy label of a single pass (no --compare)
  std::string admin_token;
  std::optional<std::string> out;  // .json, .csv or .md
  std::optional<std::string> svg;
  std::optional<std::string> records;  // JSON lines, one per request (report::records_jsonl)
  double sample_interval = 1.0;        // model seconds between /metrics polls
  double drain_timeout = 300.0;        // model seconds to let in-flight turns finish after a level
  double retry_delay = 1.0;            // model seconds before a failed session's replacement starts
  double log_interval = 10.0;          // wall seconds between progress lines when stderr is not a terminal
  workload::WorkloadConfig workload;
  std::string version;  // of lm-warden, recorded in the report's meta
};

// "3m", "180s", "180", "1.5h", "500ms" -> seconds.
Result<double> parse_duration(std::string_view text);
// "4,8,16" -> {4, 8, 16}; each level > 0.
Result<std::vector<int>> parse_levels(std::string_view text);
// "off,on" -> {"off", "on"}: two distinct labels, each "off" or "on".
Result<std::vector<std::string>> parse_compare(std::string_view text);
Result<Api> parse_api(std::string_view text);

// Cross-checks (compare needs a warden, positive scale, output extensions, ...).
Result<void> validate(const BenchOptions& options);

// The metrics URLs to poll: the given ones, or the target's /metrics.
std::vector<std::string> metrics_urls(const BenchOptions& options);

// "/api/models/{model}/routing" with the model name percent-encoded as one path segment.
std::string routing_admin_path(std::string_view model);

}  // namespace warden::bench
