#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "app/cli.hpp"

namespace warden::app {

void add_simulate_command(CLI::App& app) {
  app.add_subcommand("simulate", "(not built yet)")->callback([] {
    fmt::print(stderr, "lm-warden simulate: not built yet\n");
    std::exit(2);
  });
}

}  // namespace warden::app
