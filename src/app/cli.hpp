#pragma once

#include "core/types.hpp"

namespace CLI {
class App;
}

namespace warden::app {

// Parses the command line and runs the chosen subcommand; returns the process exit code.
int run_cli(int argc, char** argv);

// Each subcommand lives in its own file and registers its options and callback here.
void add_serve_command(CLI::App& app);
void add_sim_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_check_config_command(CLI::App& app);

// `--vllm-balancer current|legacy` (sim and simulate): which of vLLM's DP balancers is modelled.
void add_vllm_balancer_option(CLI::App& cmd, core::VllmBalancerModel& model);

}  // namespace warden::app
