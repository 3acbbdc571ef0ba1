// Options of `lm-warden bench` and the parsing of their textual forms (pure helpers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "report/row.hpp"
#include "workload/workload.hpp"

namespace warden::bench {

using base::Result;

enum class Api { anthropic, openai };

// How the "stayed on replica" column is counted (report::StayedBy): by the warden's route header, or by
// the replica a follow-up was served by against its session's previous turn.
using report::StayedBy;

struct BenchOptions {
  // Where the requests go: engines or wardens. With several, each session's turns rotate over them
  // (target_for), so one conversation's consecutive turns reach different wardens.
  std::vector<std::string> urls;
  std::string model;  // the model name sent in every request (and the warden's model for --compare)
  Api api = Api::anthropic;
  std::vector<int> levels{4, 8, 16, 24, 32};
  double duration = 180.0;            // model seconds per level
  double time_scale = 1.0;            // model seconds per wall second (the simulator's --time-scale)
  std::vector<std::string> wardens;   // warden base URLs: admin API for --compare (affinity set on each)
  std::vector<std::string> metrics;   // engines' /metrics URLs; empty = every target's /metrics
  std::optional<StayedBy> stayed_by;  // none = stayed_by_for(): route with one target, replica with several
  std::vector<std::string> compare;   // {"off","on"}: affinity per pass, toggled through the admin API
  std::string label = "run";          // policy label of a single pass (no --compare)
  std::string admin_token;
  std::optional<std::string> out;  // .json, .csv or .md
  std::optional<std::string> svg;
  std::optional<std::string> records;   // JSON lines, one per request (report::records_jsonl)
  std::optional<std::string> baseline;  // a JSON report of an earlier run, printed beside this one
  double sample_interval = 1.0;         // model seconds between /metrics polls
  double drain_timeout = 300.0;         // model seconds to let in-flight turns finish after a level
  double retry_delay = 1.0;             // model seconds before a failed session's replacement starts
  double log_interval = 10.0;           // wall seconds between progress lines when stderr is not a terminal
  workload::WorkloadConfig workload;
  // --tenants: the headless agents split between tenants in these proportions, each sending
  // `tenant_header: tenant-N` (the warden's clients.tenant_header names it).
  std::vector<std::uint32_t> tenants;
  std::string tenant_header;
  std::string version;  // of lm-warden, recorded in the report's meta
};

// "3m", "180s", "180", "1.5h", "500ms" -> seconds.
Result<double> parse_duration(std::string_view text);
// "4,8,16" -> {4, 8, 16}; each level > 0.
Result<std::vector<int>> parse_levels(std::string_view text);
// "off,on" -> {"off", "on"}: two distinct labels, each "off" or "on".
Result<std::vector<std::string>> parse_compare(std::string_view text);
Result<Api> parse_api(std::string_view text);
// "route" or "replica".
Result<StayedBy> parse_stayed_by(std::string_view text);
// The URLs of a repeatable flag, each occurrence possibly comma-separated: {"a,b", "c"} -> {a, b, c};
// none empty, none twice (trailing slashes ignored for the comparison). `flag` names it in errors.
Result<std::vector<std::string>> parse_urls(const std::vector<std::string>& given, std::string_view flag);

// The target (index into `urls`) of a session's turn: (session index + turn) mod targets, so a
// conversation's consecutive turns go to consecutive targets and, at every turn, the sessions of a level
// are spread evenly over them.
std::size_t target_for(std::uint64_t session_index, std::size_t turn, std::size_t targets);

// The stayed-on-replica measure in force: the chosen one, else route with one target, replica with
// several (a warden's route says only what that warden knows of the conversation).
StayedBy stayed_by_for(const BenchOptions& options);
std::string_view stayed_by_name(StayedBy by);

// Cross-checks (compare needs a warden, positive scale, output extensions, ...).
Result<void> validate(const BenchOptions& options);

// The metrics URLs to poll: the given ones, or every target's /metrics (summed over all of them).
std::vector<std::string> metrics_urls(const BenchOptions& options);

// "/api/models/{model}/routing" with the model name percent-encoded as one path segment.
std::string routing_admin_path(std::string_view model);

}  // namespace warden::bench
