#include "app/cli.hpp"

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <string>

#include "app/version.hpp"

namespace warden::app {

int run_cli(int argc, char** argv) {
  CLI::App app{"LM Warden: routes agent conversations to the vLLM replica that holds their prefix cache"};
  app.require_subcommand(1);
  add_serve_command(app);
  add_sim_command(app);
  add_bench_command(app);
  add_simulate_command(app);
  add_check_config_command(app);
  app.add_subcommand("version", "Print the version and exit")->callback([] {
    fmt::print("lm-warden {}\n", kVersion);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}

void add_vllm_balancer_option(CLI::App& cmd, core::VllmBalancerModel& model) {
  cmd.add_option_function<std::string>(
         "--vllm-balancer",
         [&model](const std::string& name) { model = core::parse_vllm_balancer_model(name).value(); },
         "vLLM's DP balancer: current (max(in-flight, waiting + running) + KV-pressure penalty, rotating "
         "scan start) or legacy (4 * waiting + running, fixed start)")
      ->check(CLI::IsMember({"current", "legacy"}))
      ->default_str("current");
}

}  // namespace warden::app
