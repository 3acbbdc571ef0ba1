// What re-reading the configuration file changes in a running warden (docs/config.md, "Reloading"):
// compared field by field with the configuration in force, so the gateway applies only what differs and
// reports what only a restart can change. No I/O here: the rules are unit-tested directly.
#pragma once

#include <string>
#include <vector>

#include "gateway/config.hpp"

namespace warden::gateway {

struct ReloadPlan {
  // What the new file changes and the warden applies for new requests ("api_keys", "model m: routing").
  std::vector<std::string> applied;
  // What the new file changes but the running warden keeps until a restart, each with the value in force.
  std::vector<std::string> restart_required;
  // Models whose entry (routing, names, request rewriting) is taken from the new file, by name.
  std::vector<std::string> models_updated;
  // Data-parallel models whose rank count the new file changes (same URL, no launch: section).
  std::vector<std::string> models_resized;
};

ReloadPlan plan_reload(const Config& running, const Config& next);

// What a reload did: applied (with its plan), or refused whole with every error of the file.
struct ReloadOutcome {
  bool ok = false;
  std::vector<std::string> errors;  // "FILE:LINE:COL: ..." as check-config prints them
  ReloadPlan plan;
};

// Whether the two routing settings differ in anything the file can set.
bool same_routing(const core::RoutingConfig& a, const core::RoutingConfig& b);

}  // namespace warden::gateway
