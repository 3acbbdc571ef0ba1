// `simulate`'s flags that set the routing (core::RoutingConfig): the named ones (--rebalance, --max-wait,
// ...) and `--routing KEY=VALUE` for any setting, all read through the table of routing settings
// (settings/routing.hpp), as the config file's `routing:` is.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "core/types.hpp"

namespace CLI {
class App;
}

namespace warden::app {

// The settings given, in order: the flag and its value as written, the setting's name in the table, its
// value as text.
struct RoutingFlags {
  struct Given {
    std::string flag;
    std::string setting;
    std::string value;
  };
  std::vector<Given> given;
};

void add_routing_options(CLI::App& cmd, RoutingFlags& flags);

// Each setting given onto `routing`, or the first refused, with its flag and the table's reason.
base::Result<void> apply_routing_options(const RoutingFlags& flags, core::RoutingConfig& routing);

}  // namespace warden::app
