// Gateway::reload(): the configuration file read again while the warden serves (SIGHUP, POST /api/reload).
// Only what plan_reload() finds changed is touched, in place: the ModelRuntime objects that requests in
// flight point at stay where they are (a removed model's until the warden ends), so a stream relayed
// while the file is read again ends as it began.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "gateway/config/tls_files.hpp"
#include "gateway/gateway.hpp"
#include "net/service_notify.hpp"

namespace warden::gateway {

namespace {

// The settings of a model's routing that the file changed, set on its runtime (its conversation homes
// stay; its admission queue follows). A setting the file left as it was keeps a change made through the
// admin API.
void apply_routing(ModelRuntime& m, const core::RoutingConfig& was, const core::RoutingConfig& now) {
  core::RoutingConfig next = m.router().routing_config();
  const auto take = [](auto& field, const auto& old_value, const auto& new_value) {
    if (old_value != new_value) {
      field = new_value;
    }
  };
  take(next.affinity, was.affinity, now.affinity);
  take(next.spill_threshold, was.spill_threshold, now.spill_threshold);
  take(next.max_num_seqs, was.max_num_seqs, now.max_num_seqs);
  take(next.policy, was.policy, now.policy);  // validated by the config parser
  take(next.admission, was.admission, now.admission);
  take(next.cost_spill, was.cost_spill, now.cost_spill);
  take(next.rebalance, was.rebalance, now.rebalance);
  take(next.threads, was.threads, now.threads);
  take(next.task_admission, was.task_admission, now.task_admission);
  take(next.vllm_balancer, was.vllm_balancer, now.vllm_balancer);
  m.set_routing(next);
}

}  // namespace

void Gateway::set_config_loader(std::function<ConfigResult()> load) {
  load_config_ = std::move(load);
}

ReloadOutcome Gateway::reload() {
  const net::ServiceNotifier& notifier = net::service_notifier();
  notifier.notify_reloading();
  ReloadOutcome out;
  ConfigResult loaded = load_config_ ? load_config_() : load_config_file(config_.source);
  for (const auto& e : loaded.errors) {
    out.errors.push_back(e.message);
  }
  if (loaded.ok()) {
    if (auto tls = use_tls_files(*loaded.config); !tls) {
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
                  out.errors.size(), out.errors.size() == 1 ? "" : "s", config_.source);
  } else {
    out.ok = true;
    out.plan = apply_config(std::move(*loaded.config));
    spdlog::info("configuration reloaded from {}: {}", config_.source,
                 out.plan.applied.empty() ? std::string("nothing changed")
                                          : fmt::format("{}", fmt::join(out.plan.applied, ", ")));
    for (const auto& r : out.plan.restart_required) {
      spdlog::warn("configuration reload: {} changed in the file but needs a restart", r);
    }
  }
  notifier.notify_ready();
  return out;
}

void Gateway::on_listener_tls(std::function<void(std::shared_ptr<net::TlsContext>)> use) {
  on_listener_tls_ = std::move(use);
}

// The TLS files of `config` loaded (tls_files.hpp); once they all load, the upstream context is what new
// upstream connections are verified with. Fails with one message per unusable file.
base::Result<void, std::vector<std::string>> Gateway::use_tls_files(Config& config) {
  if (auto loaded = load_tls_files(config); !loaded) {
    std::vector<std::string> errors;
    for (auto& e : loaded.error()) {
      errors.push_back(std::move(e.message));
    }
    return {boost::system::in_place_error, std::move(errors)};
  }
  proxy_.set_upstream_tls(config.upstream_tls.context);
  scrape_pool_.set_tls(config.upstream_tls.context);
  return {};
}

ReloadPlan Gateway::apply_config(Config next) {
  ReloadPlan plan = plan_reload(config_, next);
  // What a reload applies is taken whole: every request and connection from now on reads it. The
  // listener's certificate is read again at every reload: new connections get the new one, open
  // connections keep theirs.
  static_cast<LiveSettings&>(config_) = static_cast<LiveSettings&&>(next);
  browsers_ = origin_policy(config_.listen_host, config_.allowed_hosts, config_.allowed_origins);
  if (on_listener_tls_) {
    on_listener_tls_(listener_tls());
  }
  for (const auto& m : models_.served()) {
    m->outliers().configure(config_.outlier);
  }
  for (const auto& name : plan.models_updated) {
    ModelRuntime* m = models_.find(name);
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
      durable_.routing_reloaded(*m);
    }
  }
  apply_models(plan, next);
  return plan;
}

}  // namespace warden::gateway
