#include "app/agentic_options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "base/parse.hpp"

namespace warden::app {

namespace {
void add_interactive_options(CLI::App& cmd, AgenticFlags& flags);
}  // namespace

void add_agentic_options(CLI::App& cmd, AgenticFlags& flags) {
  const char* group = "Agentic workload (--workload agentic)";
  cmd.add_option("--tool-rounds", flags.tool_rounds, "Mean tool rounds per task (geometric; default 8)")
      ->group(group);
  cmd.add_option("--task-think-time", flags.task_think_time,
                 "Mean seconds the user reads before the next task (uniform x0.5-1.5; default 20)")
      ->group(group);
  cmd.add_option("--subagent-share", flags.subagent_share,
                 "Share of tasks whose main thread starts subagents (default 0.3)")
      ->group(group);
  cmd.add_option("--tasks", flags.tasks, "Tasks per session before a new session starts (default 4)")
      ->group(group);
  cmd.add_option("--result-tokens", flags.result_tokens,
                 "Median tokens of one tool result (log-normal, sigma 1; default 400)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000}))
      ->group(group);
  cmd.add_option("--session-keys", flags.session_keys,
                 "Distinct session ids the agents send: agent a sends key a mod K (default 0 = every session "
                 "its own)")
      ->group(group);
  cmd.add_option("--agent-threads", flags.agent_threads,
                 "With --session-keys: each agent's main thread sends its own X-Claude-Code-Agent-Id, as "
                 "a subagent of the shared session does (default off)")
      ->group(group);
  add_interactive_options(cmd, flags);
}

namespace {

// Who the agents are: interactive sessions beside the headless ones.
void add_interactive_options(CLI::App& cmd, AgenticFlags& flags) {
  const char* group = "Classes of work and tenants (--workload agentic)";
  cmd.add_option("--interactive", flags.interactive,
                 "Interactive sessions beside each level's headless agents: a person reads between tasks, "
                 "class interactive (Claude Code's interactive entrypoint in the billing line; default 0)")
      ->group(group);
  cmd.add_option("--interactive-think-time", flags.interactive_think_time,
                 "Mean time the person of an interactive session reads before the next task (uniform "
                 "x0.5-1.5)")
      ->capture_default_str()
      ->group(group);
}

}  // namespace

base::Result<std::vector<std::uint32_t>> parse_tenant_shares(std::string_view text) {
  std::vector<std::uint32_t> shares;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const auto n = base::parse_integer<std::uint32_t>(text.substr(at, comma - at));
    if (!n || *n == 0) {
      return "--tenants needs comma-separated shares of the agents, got '" + std::string(text) + "'";
    }
    shares.push_back(*n);
    at = comma + 1;
  }
  return shares;
}

base::Result<void> apply_agentic_options(const AgenticFlags& flags, workload::AgenticConfig& config) {
  config.rounds_mean = flags.tool_rounds.value_or(config.rounds_mean);
  config.think_time = flags.task_think_time.value_or(config.think_time);
  config.subagent_share = flags.subagent_share.value_or(config.subagent_share);
  config.tasks = flags.tasks.value_or(config.tasks);
  config.result_tokens = flags.result_tokens.value_or(config.result_tokens);
  config.session_keys = flags.session_keys.value_or(config.session_keys);
  config.agent_threads = flags.agent_threads.value_or(config.agent_threads);
  config.result_tokens_max = std::max(config.result_tokens_max, 10 * config.result_tokens);
  config.interactive = flags.interactive.value_or(config.interactive);
  const auto think = base::parse_seconds(flags.interactive_think_time);
  if (!think) {
    return std::string("--interactive-think-time is a duration: 60s, 2m");
  }
  config.interactive_think_time = *think;
  return {};
}

}  // namespace warden::app
