// What re-reading the configuration file changes in a running warden (docs/config.md, "Reloading"):
// compared field by field with the configuration in force, so the gateway applies only what differs and
// reports what only a restart can change. No I/O here: the rules are unit-tested directly.
#pragma once

#include <string>
#include <vector>

#include "gateway/config/config.hpp"

namespace warden::gateway {

struct ReloadPlan {
  // What the new file changes and the warden applies for new requests ("api_keys", "model m: routing").
  std::vector<std::string> applied;
  // What the new file changes but the running warden keeps until a restart, each with the value in force.
  std::vector<std::string> restart_required;
  // Models whose entry (routing, names, request rewriting) is taken from the new file, by name.
  std::vector<std::string> models_updated;
  // Models whose replica list the new file changes (URLs, data-parallel URL or rank count; no launch:
  // section on either side): relaid by URL (ModelRuntime::relay()).
  std::vector<std::string> models_relaid;
  // Models the new file adds (served at once) or removes (404 for new requests, streams complete).
  std::vector<std::string> models_added;
  std::vector<std::string> models_removed;
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
