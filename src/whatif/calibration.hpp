// Simulated rows against the reference table (routing.md) with issue 6's tolerances:
// - prefix hits within +-8 points at 4, 8 and 16 sessions, +-10 at 24 and 32;
// - output tokens/min, TTFB p50 and TTFB p95 within a factor of 1.5 at 4, 8 and 16 sessions, and the
//   same winner (off vs on) as the reference in those columns and in prefix hits;
// - output tokens/min within a factor of 1.5 at 24 and 32 sessions.
// Other cells are shown with their residuals but not judged (sessions/h is noise in the reference: 9-31
// sessions finish per level; replicas busy off vs on barely differs there).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/row.hpp"
#include "whatif/driver.hpp"

namespace warden::whatif {

struct CellCheck {
  int sessions = 0;
  std::string column;  // "prefix hits", "output tokens/min", ...
  std::string side;    // "off", "on" or "winner"
  std::optional<double> reference;
  std::optional<double> simulated;
  std::string rule;  // "±8 pt", "×1.5", "same winner"
  bool pass = false;
};

struct Calibration {
  std::vector<CellCheck> checks;
  bool pass = true;
  int failed = 0;
  // Not judged: TTFB p50 and p95 at 24 and 32 sessions against the ×1.5 band the headroom rows must
  // meet, so the distance of the overloaded rows shows in every run.
  std::vector<CellCheck> overload_bands;
};

// The fitted what-if setup of the reference measurement (docs/simulator.md): a4000-qwen3-4b x 4 replicas,
// vllm-lb then affinity on warm engines, 5 levels x 3 min, the claude-code workload with a 3 s think gap
// and a 0.2 s client round trip, 2,100 KV blocks per replica.
SimulationConfig reference_setup();

// `off` and `on` are the policy names of the simulated rows standing for the reference's off and on
// (normally vllm-lb and affinity). Levels missing from the rows are skipped.
Calibration check_against_reference(const std::vector<report::Row>& rows, std::string_view off,
                                    std::string_view on);

// Side-by-side Markdown table: for every level and column, reference off → on, simulated off → on, and
// the residuals (difference in points for percentages, ratio sim/ref otherwise).
std::string side_by_side_markdown(const std::vector<report::Row>& rows, std::string_view off,
                                  std::string_view on);

// The judged cells as a Markdown list of failures ("all N checks pass" when none), then the overloaded
// rows' TTFB cells outside the headroom band.
std::string calibration_summary(const Calibration& calibration);

}  // namespace warden::whatif
