// `lm-warden bench`: the closed-loop agent-session load over real HTTP, one level after another, as
// routing.md's reference measurement did it. All sessions are coroutines on one io_context.
#pragma once

#include <cstdio>
#include <vector>

#include <boost/json.hpp>
#include "bench/options.hpp"

#include "report/groups.hpp"
#include "report/report.hpp"

namespace warden::bench {

struct BenchOutcome {
  std::vector<report::Row> rows;  // one per (pass, level) measured, the interrupted level included
  // By group of agents (--interactive, --tenants), each level's: the table (with its header) and the JSON.
  report::Grid groups = report::group_grid_header();
  boost::json::array groups_json;
  bool interrupted = false;  // Ctrl-C (SIGINT/SIGTERM) stopped the run early
  bool failed = false;       // setup failure (bad URL, admin API refused), see `error`
  std::string error;
};

// Runs every pass and level on the calling thread; progress and log lines go to `log`.
BenchOutcome run_bench(const BenchOptions& options, std::FILE* log);

// The whole command: runs, prints the table to stdout, writes --out and --svg. Returns the exit code
// (0 also when some requests failed: they are counted in the Errors column).
int run_bench_command(const BenchOptions& options);

// meta of the JSON report: command settings and workload, so a report says how it was measured.
boost::json::object report_meta(const BenchOptions& options, bool interrupted);

}  // namespace warden::bench
