#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "app/cli.hpp"

namespace warden::app {

void add_bench_command(CLI::App& app) {
  app.add_subcommand("bench", "(not built yet)")->callback([] {
    fmt::print(stderr, "lm-warden bench: not built yet\n");
    std::exit(2);
  });
}

}  // namespace warden::app
