// `lm-warden check-config FILE`: validates a configuration without starting anything (as `nginx -t`), so
// an operator can test an edited file before a restart or a reload.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "app/cli.hpp"
#include "gateway/config/config.hpp"
#include "gateway/config/tls_files.hpp"

namespace warden::app {

namespace {

int replica_total(const gateway::Config& config) {
  int total = 0;
  for (const auto& m : config.models) {
    total += m.replica_count();
  }
  return total;
}

// 0 with one line on stdout when the file is valid; 1 with every error (FILE:LINE:COL: ...) on stderr.
int run_check_config(const std::string& path) {
  auto loaded = gateway::load_config_file(path);
  if (loaded.ok()) {
    if (auto tls = gateway::load_tls_files(*loaded.config); !tls) {
      loaded.errors = tls.error();
      loaded.config.reset();  // the certificate, key or CA files named in the file do not load
    }
  }
  if (!loaded.ok()) {
    fmt::print(stderr, "{}\nlm-warden check-config: {} is not valid ({} error{})\n", loaded.error_text(),
               path, loaded.errors.size(), loaded.errors.size() == 1 ? "" : "s");
    return 1;
  }
  const gateway::Config& c = *loaded.config;
  const int replicas = replica_total(c);
  fmt::print("lm-warden check-config: {} is valid ({} model{}, {} replica{}, listen {}:{}{})\n", path,
             c.models.size(), c.models.size() == 1 ? "" : "s", replicas, replicas == 1 ? "" : "s",
             c.listen_host, c.listen_port, c.tls ? " with TLS" : "");
  return 0;
}

}  // namespace

void add_check_config_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto* cmd =
      app.add_subcommand("check-config", "Validate a configuration file without starting the gateway");
  cmd->add_option("FILE", *path, "YAML configuration file (see docs/config.md)")->required();
  cmd->callback([path] { std::exit(run_check_config(*path)); });
}

}  // namespace warden::app
