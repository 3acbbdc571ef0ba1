// The agentic workload's main knobs as flags, shared by `bench` and `simulate` (docs/bench.md).
#pragma once

#include <cstddef>
#include <optional>

#include "workload/workload.hpp"

namespace CLI {
class App;
}

namespace warden::app {

// Unset: the preset's value.
struct AgenticFlags {
  std::optional<double> tool_rounds;
  std::optional<double> task_think_time;
  std::optional<double> subagent_share;
  std::optional<std::size_t> tasks;
  std::optional<std::size_t> result_tokens;
  std::optional<std::size_t> session_keys;
  std::optional<bool> agent_threads;
};

void add_agentic_options(CLI::App& cmd, AgenticFlags& flags);
void apply_agentic_options(const AgenticFlags& flags, workload::AgenticConfig& config);

}  // namespace warden::app
