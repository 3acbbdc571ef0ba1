// The agentic workload's main knobs as flags, shared by `bench` and `simulate` (docs/bench.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

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
  std::optional<std::size_t> interactive;
  std::string interactive_think_time = "60s";
};

void add_agentic_options(CLI::App& cmd, AgenticFlags& flags);
[[nodiscard]] base::Result<void> apply_agentic_options(const AgenticFlags& flags,
                                                       workload::AgenticConfig& config);

// --tenants: comma-separated shares of the headless agents ("20,6"); empty: none.
[[nodiscard]] base::Result<std::vector<std::uint32_t>> parse_tenant_shares(std::string_view text);

}  // namespace warden::app
