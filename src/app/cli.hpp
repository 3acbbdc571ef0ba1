#pragma once

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

}  // namespace warden::app
