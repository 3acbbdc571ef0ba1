#include "gateway/reload/reloader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "gateway/config/keep_unchanged.hpp"
#include "gateway/config/tls_files.hpp"
#include "net/service_notify.hpp"

namespace warden::gateway {

namespace {

// Every setting of a model's routing that the file changed, set on its runtime (its conversation homes
// stay; its admission queue follows). A setting the file left as it was keeps a change made through the
// admin API.
void apply_routing(ModelRuntime& m, const core::RoutingConfig& was, const core::RoutingConfig& now) {
  core::RoutingConfig next = now;
  keep_unchanged(next, m.router().routing_config(), was, now);
  m.set_routing(next);
}

// A model re-added finds the conversation homes it had stored (DurableState keeps a removed model's).
void add_model(ReloadContext& warden, const ModelConfig& config) {
  const Config& in_force = warden.config();
  ModelRuntime& m = warden.models().add(config, in_force.metrics.unhealthy_after, in_force.outlier);
  m.replica_set().unscraped("added by a reload, not scraped yet");
  warden.durable().restore_model(m, clocks_now());  // a stored routing change reaches its queue with it
  warden.model_added(m);
  spdlog::info("model {} added with {} replicas", config.name, config.replica_count());
}

// The requests already sent to a removed replica finish there, a first byte still awaited included (its
// engine is out of the list, not necessarily down): the layout they were routed with is translated when
// they end (Placement::follow_layout). The conversations homed there fail over at their next
// turn. A removed model answers 404 to new requests; its requests in flight complete against the runtime
// they started with.
void apply_models(ReloadContext& warden, const ReloadPlan& plan, const Config& next) {
  ModelSet& models = warden.models();
  for (const auto& name : plan.models_relaid) {
    if (ModelRuntime* m = models.find(name)) {
      const core::ReplicaRemap remap = m->relay(*next.find_model(name));
      spdlog::info("model {}: {} replicas now, {} added, {} removed", name, remap.new_count,
                   remap.added().size(), remap.removed().size());
      m->retry_queued();
    }
  }
  for (const auto& name : plan.models_removed) {
    models.remove(name);
    spdlog::info("model {} removed: new requests answer 404, requests in flight complete", name);
  }
  for (const auto& name : plan.models_added) {
    add_model(warden, *next.find_model(name));
  }
  // The configuration in force lists the models served, as their runtimes hold them.
  Config& config = warden.config();
  config.models.clear();
  for (const auto& m : models.served()) {
    config.models.push_back(m->config());
  }
  if (!plan.models_relaid.empty() || !plan.models_removed.empty() || !plan.models_added.empty()) {
    warden.models_changed();
  }
}

ReloadPlan apply(ReloadContext& warden, Config next) {
  Config& config = warden.config();
  ReloadPlan plan = plan_reload(config, next);
  // What a reload applies is taken whole: every request and connection from now on reads it. The
  // listener's certificate is read again at every reload: new connections get the new one, open
  // connections keep theirs.
  static_cast<LiveSettings&>(config) = static_cast<LiveSettings&&>(next);
  warden.settings_taken();
  for (const auto& m : warden.models().served()) {
    m->replica_set().outliers().configure(config.outlier);
  }
  for (const auto& name : plan.models_updated) {
    ModelRuntime* m = warden.models().find(name);
    const ModelConfig* theirs = next.find_model(name);
    if (!m || !theirs) {
      continue;  // plan_reload() names only models both configurations have
    }
    const bool routing = !same_routing(m->config().routing, theirs->routing);
    if (routing) {
      apply_routing(*m, m->config().routing, theirs->routing);  // a held request may go under the new rules
    }
    m->update_entry(*theirs);
    if (routing) {
      warden.durable().routing_reloaded(*m);
    }
  }
  apply_models(warden, plan, next);
  return plan;
}

}  // namespace

ReloadOutcome Reloader::reload(ReloadContext& warden) {
  const net::ServiceNotifier& notifier = net::service_notifier();
  notifier.notify_reloading();
  ReloadOutcome out;
  const std::string& source = warden.config().source;
  ConfigResult loaded = load_ ? load_() : load_config_file(source);
  for (const auto& e : loaded.errors) {
    out.errors.push_back(e.message);
  }
  if (loaded.ok()) {
    if (auto tls = load_tls(*loaded.config); !tls) {
      auto errors = std::move(tls).error();
      out.errors.insert(out.errors.end(), errors.begin(), errors.end());
      loaded.config.reset();  // a certificate that does not load refuses the file whole
    }
  }
  if (!loaded.ok()) {
    for (const auto& e : out.errors) {
      spdlog::error("{}", e);
    }
    spdlog::error("configuration not reloaded: {} error{} in {}; the running configuration stays",
                  out.errors.size(), out.errors.size() == 1 ? "" : "s", source);
  } else {
    out.ok = true;
    out.plan = apply(warden, std::move(*loaded.config));
    spdlog::info("configuration reloaded from {}: {}", source,
                 out.plan.applied.empty() ? std::string("nothing changed")
                                          : fmt::format("{}", fmt::join(out.plan.applied, ", ")));
    for (const auto& r : out.plan.restart_required) {
      spdlog::warn("configuration reload: {} changed in the file but needs a restart", r);
    }
  }
  notifier.notify_ready();
  return out;
}

base::Result<void, std::vector<std::string>> Reloader::load_tls(Config& config) {
  if (auto loaded = load_tls_files(config); !loaded) {
    std::vector<std::string> errors;
    for (auto& e : loaded.error()) {
      errors.push_back(std::move(e.message));
    }
    return {boost::system::in_place_error, std::move(errors)};
  }
  return {};
}

}  // namespace warden::gateway
