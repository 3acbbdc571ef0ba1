#include "gateway/reload/reload_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace warden::gateway {

namespace {

// The replicas a model routes to and the engines it starts: read at start (the routing state, the
// scrapers and the launched engines are built from them).
bool same_layout(const ModelConfig& a, const ModelConfig& b) {
  return a.data_parallel == b.data_parallel && a.dp_url == b.dp_url && a.dp_size == b.dp_size &&
         a.urls == b.urls && a.launch.has_value() == b.launch.has_value();
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

std::string listen_text(const Config& c) {
  return c.listen_host.find(':') != std::string::npos ? fmt::format("[{}]:{}", c.listen_host, c.listen_port)
                                                      : fmt::format("{}:{}", c.listen_host, c.listen_port);
}

std::string redis_text(const Config& c) {
  return c.shared_state ? c.shared_state->redis.text + " prefix " + c.shared_state->prefix : "none";
}

bool same_shared_state(const Config& a, const Config& b) {
  if (a.shared_state.has_value() != b.shared_state.has_value()) {
    return false;
  }
  if (!a.shared_state) {
    return true;
  }
  const auto& x = *a.shared_state;
  const auto& y = *b.shared_state;
  return x.redis == y.redis && x.prefix == y.prefix && x.lookup_timeout == y.lookup_timeout &&
         x.connect_timeout == y.connect_timeout && x.command_timeout == y.command_timeout;
}

bool same_metrics(const MetricsConfig& a, const MetricsConfig& b) {
  return a.scrape_interval == b.scrape_interval && a.scrape_timeout == b.scrape_timeout &&
         a.unhealthy_after == b.unhealthy_after;
}

bool same_timeouts(const TimeoutsConfig& a, const TimeoutsConfig& b) {
  return a.connect == b.connect && a.first_byte == b.first_byte && a.idle == b.idle;
}

// The settings the server and the stores were built with.
void plan_restart_only(const Config& running, const Config& next, ReloadPlan& plan) {
  auto keep = [&](bool same, std::string_view what, const std::string& in_force) {
    if (!same) {
      plan.restart_required.push_back(fmt::format("{} (in force: {})", what, in_force));
    }
  };
  keep(listen_text(running) == listen_text(next), "listen", listen_text(running));
  keep(running.state_dir == next.state_dir, "state_dir", running.state_dir);
  keep(same_shared_state(running, next), "state", redis_text(running));
  keep(running.max_body_bytes == next.max_body_bytes, "max_body_size",
       std::to_string(running.max_body_bytes));
  keep(running.max_connections == next.max_connections, "max_connections",
       std::to_string(running.max_connections));
  keep(running.max_inflight_body_bytes == next.max_inflight_body_bytes, "max_inflight_body_size",
       std::to_string(running.max_inflight_body_bytes));
  keep(running.shutdown_grace == next.shutdown_grace, "shutdown_grace",
       fmt::format("{}ms", running.shutdown_grace.count()));
  keep(running.stats_retention == next.stats_retention, "stats_retention",
       fmt::format("{}s", running.stats_retention.count()));
  keep(same_metrics(running.metrics, next.metrics), "metrics",
       fmt::format("scrape_interval {}ms", running.metrics.scrape_interval.count()));
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
    const bool rest = old.served_model_name != now->served_model_name ||
                      old.fit_max_tokens != now->fit_max_tokens ||
                      old.normalize_prompt != now->normalize_prompt;
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
  return a.affinity == b.affinity && a.spill_threshold == b.spill_threshold &&
         a.max_num_seqs == b.max_num_seqs && a.policy == b.policy && a.admission == b.admission &&
         a.vllm_balancer == b.vllm_balancer && a.cost_spill == b.cost_spill && a.rebalance == b.rebalance &&
         a.threads == b.threads;
}

namespace {

// The listener's certificate is read again at every reload (a renewed one under the same name); the
// upstreams' files when they are named differently.
void plan_tls(const Config& running, const Config& next, ReloadPlan& plan) {
  if (next.tls) {
    plan.applied.emplace_back(running.tls ? "tls (certificate and key read again)" : "tls (on)");
  } else if (running.tls) {
    plan.applied.emplace_back("tls (off)");
  }
  const auto& a = running.upstream_tls;
  const auto& b = next.upstream_tls;
  if (a.ca_file != b.ca_file || a.cert_file != b.cert_file || a.key_file != b.key_file) {
    plan.applied.emplace_back("upstream_tls");
  }
}

}  // namespace

ReloadPlan plan_reload(const Config& running, const Config& next) {
  ReloadPlan plan;
  if (running.api_keys != next.api_keys) {
    plan.applied.emplace_back("api_keys");
  }
  if (running.admin_token != next.admin_token) {
    plan.applied.emplace_back("admin_token");
  }
  if (running.auth.reads != next.auth.reads) {
    plan.applied.emplace_back("auth");
  }
  if (!same_timeouts(running.timeouts, next.timeouts)) {
    plan.applied.emplace_back("timeouts");
  }
  plan_tls(running, next, plan);
  if (running.outlier != next.outlier) {
    plan.applied.emplace_back("outlier");
  }
  plan_restart_only(running, next, plan);
  plan_models(running, next, plan);
  return plan;
}

}  // namespace warden::gateway
