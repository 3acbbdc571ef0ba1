#include "gateway/reload/reload_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace warden::gateway {

namespace {

// The replicas a model routes to and the engines it starts: read at start (the routing state, the
// scrapers and the launched engines are built from them).
bool same_layout(const ModelReplicas& a, const ModelReplicas& b) {
  return a == b;
}

// The replicas change without an engine of the warden's own to start or stop: the ones that remain keep
// their state and conversations (matched by URL), new ones are scraped, removed ones fail over.
bool relayable(const ModelConfig& a, const ModelConfig& b) {
  return !a.launch && !b.launch;
}

std::string layout_text(const ModelConfig& a, const ModelConfig& b) {
  if (a.data_parallel && b.data_parallel && a.dp_url == b.dp_url) {
    return fmt::format("data_parallel size {} -> {}", a.dp_size, b.dp_size);
  }
  return fmt::format("replicas {} -> {}", a.replica_count(), b.replica_count());
}

// The keys of the file's top level a reload compares, each as its table entry says (config.hpp, FileKey):
// the ones `on_reload` names whose values differ, by name (or what the entry calls a change).
std::vector<const FileKey*> changed(const Config& running, const Config& next, OnReload on_reload) {
  std::vector<const FileKey*> out;
  for (const FileKey& k : file_keys()) {
    if (k.on_reload == on_reload && !k.same(running, next)) {
      out.push_back(&k);
    }
  }
  return out;
}

// The restart-only settings the file changed, each with the value in force. The groups are compared whole
// first: a setting without a key of its own is still reported ("other settings").
void plan_restart_only(const Config& running, const Config& next, ReloadPlan& plan) {
  if (static_cast<const RestartSettings&>(running) == static_cast<const RestartSettings&>(next)) {
    return;
  }
  const std::size_t before = plan.restart_required.size();
  for (const FileKey* k : changed(running, next, OnReload::restart)) {
    plan.restart_required.push_back(
        fmt::format("{} (in force: {})", k->what ? k->what : k->name, k->in_force(running)));
  }
  if (plan.restart_required.size() == before) {
    plan.restart_required.emplace_back("other settings (in force: the file read at start)");
  }
}

// The settings a reload applies whole (LiveSettings), named for the log and the endpoint's answer.
void plan_live(const Config& running, const Config& next, ReloadPlan& plan) {
  // The listener's certificate is read again at every reload (a renewed one under the same name); that
  // line names no change, turning TLS on or off does.
  bool named = false;
  if (next.tls) {
    plan.applied.emplace_back(running.tls ? "tls (certificate and key read again)" : "tls (on)");
    named = !running.tls;
  } else if (running.tls) {
    plan.applied.emplace_back("tls (off)");
    named = true;
  }
  if (static_cast<const LiveSettings&>(running) == static_cast<const LiveSettings&>(next)) {
    return;
  }
  for (const FileKey* k : changed(running, next, OnReload::applied)) {
    plan.applied.emplace_back(k->what ? k->what : k->name);
    named = true;
  }
  if (!named) {
    plan.applied.emplace_back("other settings");
  }
}

void plan_models(const Config& running, const Config& next, ReloadPlan& plan) {
  for (const auto& old : running.models) {
    const ModelConfig* now = next.find_model(old.name);
    if (!now && old.launch) {
      plan.restart_required.push_back(
          fmt::format("model {} removed (its engines run until a restart)", old.name));
      continue;
    }
    if (!now) {
      plan.applied.push_back(fmt::format("model {} removed", old.name));
      plan.models_removed.push_back(old.name);
      continue;
    }
    if (!same_layout(old, *now) && relayable(old, *now)) {
      plan.applied.push_back(fmt::format("model {}: {}", old.name, layout_text(old, *now)));
      plan.models_relaid.push_back(old.name);
    } else if (!same_layout(old, *now)) {
      plan.restart_required.push_back(
          fmt::format("model {}: replicas or launch (in force: {} replicas)", old.name, old.replica_count()));
      continue;
    }
    const bool routing = !same_routing(old.routing, now->routing);
    // The rest of the entry compared whole (routing aside): a field the names below miss is still applied.
    ModelEntry rest_was = old;
    rest_was.routing = now->routing;
    const bool rest = rest_was != static_cast<const ModelEntry&>(*now);
    if (routing) {
      plan.applied.push_back(fmt::format("model {}: routing", old.name));
    }
    if (rest) {
      plan.applied.push_back(
          fmt::format("model {}: served_model_name, fit_max_tokens, normalize_prompt", old.name));
    }
    if (routing || rest) {
      plan.models_updated.push_back(old.name);
    }
  }
  for (const auto& m : next.models) {
    if (running.find_model(m.name)) {
      continue;
    }
    if (m.launch) {
      plan.restart_required.push_back(
          fmt::format("model {} added with a launch: section (not served yet)", m.name));
    } else {
      plan.applied.push_back(fmt::format("model {} added", m.name));
      plan.models_added.push_back(m.name);
    }
  }
}

}  // namespace

bool same_routing(const core::RoutingConfig& a, const core::RoutingConfig& b) {
  return a == b;  // every field: a new one cannot be left out
}

ReloadPlan plan_reload(const Config& running, const Config& next) {
  ReloadPlan plan;
  plan_live(running, next, plan);
  plan_restart_only(running, next, plan);
  plan_models(running, next, plan);
  return plan;
}

}  // namespace warden::gateway
