// The models' side of a reload (docs/config.md, "Reloading"): a model's replica list relaid by URL, a
// model added (served and scraped at once) or removed (404 for new requests; its requests in flight
// complete against the runtime they started with, kept until the warden ends).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/gateway.hpp"

namespace warden::gateway {

void Gateway::apply_models(const ReloadPlan& plan, const Config& next) {
  for (const auto& name : plan.models_relaid) {
    if (ModelRuntime* m = models_.find(name)) {
      relay_model(*m, *next.find_model(name));
    }
  }
  for (const auto& name : plan.models_removed) {
    remove_model(name);
  }
  for (const auto& name : plan.models_added) {
    add_model(*next.find_model(name));
  }
  // The configuration in force lists the models served, as their runtimes hold them.
  config_.models.clear();
  for (const auto& m : models_.served()) {
    config_.models.push_back(m->config());
  }
  if (plan.models_relaid.empty() && plan.models_removed.empty() && plan.models_added.empty()) {
    return;
  }
  sync_upstreams();
  // The homes a relay moved to new indexes are stored now, not at the next second's write: a warden
  // killed right after the reload must not read them back under the indexes of the old list.
  flush();
}

// The requests already sent to a removed replica finish there, a first byte still awaited included (its
// engine is out of the list, not necessarily down): the layout they were routed with is translated when
// they end (Exchange::follow_layout). The conversations homed there fail over at their next turn.
void Gateway::relay_model(ModelRuntime& m, const ModelConfig& next) {
  const core::ReplicaRemap remap = m.relay(next);
  spdlog::info("model {}: {} replicas now, {} added, {} removed", m.config().name, remap.new_count,
               remap.added().size(), remap.removed().size());
  m.retry_queued();
}

// A model re-added finds the conversation homes it had stored (DurableState keeps a removed model's).
void Gateway::add_model(const ModelConfig& config) {
  ModelRuntime& m = models_.add(config, config_.metrics.unhealthy_after, config_.outlier);
  for (auto& r : m.replicas()) {
    r.metrics.healthy = false;  // until its first scrape
    r.last_error = "added by a reload, not scraped yet";
  }
  durable_.restore_model(m, clocks_now());  // a stored routing change reaches its queue with it
  if (shared_) {
    m.router().track_session_changes(true);
  }
  spdlog::info("model {} added with {} replicas", config.name, config.replica_count());
}

void Gateway::remove_model(const std::string& name) {
  models_.remove(name);
  spdlog::info("model {} removed: new requests answer 404, requests in flight complete", name);
}

}  // namespace warden::gateway
