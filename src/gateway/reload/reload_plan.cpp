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

std::string listen_text(const RestartSettings& c) {
  return c.listen_host.find(':') != std::string::npos ? fmt::format("[{}]:{}", c.listen_host, c.listen_port)
                                                      : fmt::format("{}:{}", c.listen_host, c.listen_port);
}

std::string redis_text(const RestartSettings& c) {
  return c.shared_state ? c.shared_state->redis.text + " prefix " + c.shared_state->prefix : "none";
}

// The restart-only settings the file changed, each with the value in force. The groups are compared whole
// first: a setting without a name here is still reported ("other settings").
void plan_restart_only(const RestartSettings& running, const RestartSettings& next, ReloadPlan& plan) {
  if (running == next) {
    return;
  }
  const std::size_t before = plan.restart_required.size();
  auto keep = [&](bool same, std::string_view what, const std::string& in_force) {
    if (!same) {
      plan.restart_required.push_back(fmt::format("{} (in force: {})", what, in_force));
    }
  };
  keep(listen_text(running) == listen_text(next), "listen", listen_text(running));
  keep(running.state_dir == next.state_dir, "state_dir", running.state_dir);
  keep(running.shared_state == next.shared_state, "state", redis_text(running));
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
  keep(running.metrics == next.metrics, "metrics",
       fmt::format("scrape_interval {}ms", running.metrics.scrape_interval.count()));
  keep(plan.restart_required.size() > before, "other settings", "the file read at start");
}

// The settings a reload applies whole (LiveSettings), named for the log and the endpoint's answer.
void plan_live(const LiveSettings& running, const LiveSettings& next, ReloadPlan& plan) {
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
  if (running == next) {
    return;
  }
  auto take = [&](bool same, std::string_view what) {
    if (!same) {
      plan.applied.emplace_back(what);
      named = true;
    }
  };
  take(!running.tls || !next.tls || running.tls == next.tls, "tls files");  // on and off are named above
  take(running.upstream_tls == next.upstream_tls, "upstream_tls");
  take(running.api_keys == next.api_keys, "api_keys");
  take(running.admin_token == next.admin_token, "admin_token");
  take(running.auth == next.auth, "auth");
  take(running.allowed_hosts == next.allowed_hosts, "allowed_hosts");
  take(running.allowed_origins == next.allowed_origins, "allowed_origins");
  take(running.timeouts == next.timeouts, "timeouts");
  take(running.outlier == next.outlier, "outlier");
  take(named, "other settings");
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
