#include "whatif/policies.hpp"

#include <algorithm>
#include <array>

#include "whatif/flight.hpp"
#include "whatif/sim_types.hpp"

namespace warden::whatif {

namespace {

// vllm-lb: vLLM's balancer model. warden-lb: the warden with affinity off (core's vllm-lb, as `serve` runs
// it). affinity: the warden. admission and tasks: the warden with one rule of admission each. ceiling: routes
// as vLLM's balancer does, with every prefix after a task's first request cached (load balance is all that
// is left to routing). The rest: core's baselines.
constexpr std::array<SimulatePolicy, 9> kPolicies{{
    {"vllm-lb", "vllm-lb", {.vllm_model = true}, ""},
    {"warden-lb", "vllm-lb", {}, ""},
    {"affinity", "affinity", {.affinity = true, .task_admission = true}, ""},
    {"admission", "affinity", {.affinity = true, .admission = true}, ""},
    {"tasks",
     "affinity",
     {.affinity = true, .admission = true, .hold_task_starts = true},
     "admission that also holds task starts"},
    {"ceiling",
     "vllm-lb",
     {.vllm_model = true, .ceiling = true},
     "vllm-lb with every prefix after a task's first request cached"},
    {"round-robin", "round-robin", {}, ""},
    {"session-hash", "session-hash", {}, ""},
    {"chwbl", "chwbl", {}, ""},
}};

}  // namespace

std::span<const SimulatePolicy> simulate_policies() {
  return kPolicies;
}

const SimulatePolicy* find_policy(std::string_view name) {
  const auto it = std::find_if(kPolicies.begin(), kPolicies.end(),
                               [&](const SimulatePolicy& p) { return p.name == name; });
  return it == kPolicies.end() ? nullptr : &*it;
}

std::string simulate_policies_help() {
  std::string help;
  for (const SimulatePolicy& p : kPolicies) {
    help += help.empty() ? "" : ", ";
    help += p.name;
    if (!p.about.empty()) {
      help += " (" + std::string(p.about) + ")";
    }
  }
  return help;
}

std::vector<std::string> simulate_policy_names() {
  std::vector<std::string> names;
  for (const SimulatePolicy& p : kPolicies) {
    names.emplace_back(p.name);
  }
  return names;
}

core::RoutingConfig policy_routing(const SimulatePolicy& policy, const SimulationConfig& config) {
  const PolicySettings& s = policy.settings;
  core::RoutingConfig routing = config.routing;
  routing.affinity = s.affinity;
  routing.policy = std::string(policy.core);
  routing.max_num_seqs = config.engine.max_num_seqs;
  routing.task_admission.enabled = routing.task_admission.enabled && s.task_admission;
  if (s.admission) {
    routing.admission.enabled = true;
    routing.admission.hold_task_starts = s.hold_task_starts;
  } else {
    routing.admission = {};
  }
  return routing;
}

core::SessionTableConfig policy_sessions(const SimulatePolicy& policy, const SimulationConfig& config) {
  core::SessionTableConfig sessions = config.sessions;
  if (policy.settings.admission) {
    sessions.adaptive_gap_factor = config.admission_gap_factor;
    sessions.min_active_window = to_time(config.admission_min_window);
  }
  return sessions;
}

}  // namespace warden::whatif
