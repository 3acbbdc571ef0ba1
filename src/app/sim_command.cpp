#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "app/cli.hpp"

namespace warden::app {

void add_sim_command(CLI::App& app) {
  app.add_subcommand("sim", "(not built yet)")->callback([] {
    fmt::print(stderr, "lm-warden sim: not built yet\n");
    std::exit(2);
  });
}

}  // namespace warden::app
