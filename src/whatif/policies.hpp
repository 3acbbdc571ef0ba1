// The policies `simulate` runs, as one table: each row a name, the core policy its Routers run and what the
// what-if driver sets around it. No other code compares policy names: it reads a row's settings.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/session_table.hpp"
#include "core/types.hpp"

namespace warden::whatif {

struct SimulationConfig;

struct PolicySettings {
  bool vllm_model = false;        // vLLM's own balancer places requests (core::VllmBalancer), not a Router
  bool ceiling = false;           // each request after a task's first one finds its prefix cached
  bool affinity = false;          // the Router's routing.affinity
  bool task_admission = false;    // keeps the routing's task admission (the others measure without it)
  bool admission = false;         // working-set admission and cost-aware spill, with its resident window
  bool hold_task_starts = false;  // admission holds a task's first request too, until its home has room
};

struct SimulatePolicy {
  std::string_view name;
  std::string_view core;  // the registry name of the policy its Routers run (core/policy.hpp)
  PolicySettings settings;
  std::string_view about;  // for `simulate --help`, when the name does not say it
};

// Every row, in the order `simulate` lists them.
std::span<const SimulatePolicy> simulate_policies();

// The row of `name`, or null.
const SimulatePolicy* find_policy(std::string_view name);

// Policy names simulate accepts, in the table's order.
std::vector<std::string> simulate_policy_names();

// The names with what each is, for `--policies`' help.
std::string simulate_policies_help();

// The routing a policy's Routers run: the run's, with the row's policy, affinity and admission, and the
// engine's max_num_seqs.
core::RoutingConfig policy_routing(const SimulatePolicy& policy, const SimulationConfig& config);

// ... and their session table.
core::SessionTableConfig policy_sessions(const SimulatePolicy& policy, const SimulationConfig& config);

}  // namespace warden::whatif
