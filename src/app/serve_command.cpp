#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "app/cli.hpp"

namespace warden::app {

void add_serve_command(CLI::App& app) {
  app.add_subcommand("serve", "(not built yet)")->callback([] {
    fmt::print(stderr, "lm-warden serve: not built yet\n");
    std::exit(2);
  });
}

}  // namespace warden::app
