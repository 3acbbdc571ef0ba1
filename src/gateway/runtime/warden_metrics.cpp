#include "gateway/runtime/warden_metrics.hpp"

#include <fmt/format.h>

namespace warden::gateway {

std::string prometheus_escape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void WardenMetrics::request_done(const RequestRecord& r) {
  const std::string replica = r.replica >= 0 ? std::to_string(r.replica) : std::string("none");
  requests_[{r.model, replica, r.route.empty() ? std::string("none") : r.route, r.status}] += 1;
  if (r.model.empty()) {
    return;
  }
  if (!r.stream_break.empty()) {
    stream_breaks_[{r.model, r.stream_break}] += 1;
  }
  if (r.ttfb_s) {
    ttfb_[r.model].observe(*r.ttfb_s);
  }
  prompt_tokens_[{r.model, "cached"}] += static_cast<std::uint64_t>(r.prompt_cached());
  prompt_tokens_[{r.model, "computed"}] += static_cast<std::uint64_t>(r.prompt_computed());
  completion_tokens_[r.model] +=
      static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.completion_tokens.value_or(0)));
}

void WardenMetrics::Histogram::observe(double v) {
  for (std::size_t i = 0; i < kTtfbBuckets.size(); ++i) {
    if (v <= kTtfbBuckets[i]) {
      counts[i] += 1;
    }
  }
  sum += v;
  count += 1;
}

void WardenMetrics::queue_admitted(const std::string& model, double waited_s) {
  queue_wait_[model].observe(waited_s);
  queue_admitted_[model] += 1;
}

void WardenMetrics::queue_rejected(const std::string& model, const std::string& reason) {
  queue_rejected_[{model, reason}] += 1;
}

void WardenMetrics::queue_abandoned(const std::string& model) {
  queue_abandoned_[model] += 1;
}

void WardenMetrics::scrape_error(const std::string& url) {
  scrape_errors_[url] += 1;
  scrapes_[url] += 1;
}

void WardenMetrics::replica_ejected(const std::string& model, int replica, std::string_view reason) {
  ejections_[{model, replica, std::string(reason)}] += 1;
}

void WardenMetrics::tls_failure(std::string_view kind) {
  tls_failures_[std::string(kind)] += 1;
}

void WardenMetrics::scrape_ok(const std::string& url) {
  scrape_errors_.try_emplace(url, 0);
  scrapes_[url] += 1;
}

namespace {

// One model's TTFB histogram in Prometheus' cumulative form (`counts` are cumulative already).
template <class H>
void render_histogram(std::string& o, std::string_view name, const std::string& model, const H& h) {
  for (std::size_t i = 0; i < WardenMetrics::kTtfbBuckets.size(); ++i) {
    fmt::format_to(std::back_inserter(o), "{}_bucket{{model=\"{}\",le=\"{}\"}} {}\n", name, model,
                   WardenMetrics::kTtfbBuckets[i], h.counts[i]);
  }
  fmt::format_to(std::back_inserter(o), "{}_bucket{{model=\"{}\",le=\"+Inf\"}} {}\n", name, model, h.count);
  fmt::format_to(std::back_inserter(o), "{}_sum{{model=\"{}\"}} {}\n", name, model, h.sum);
  fmt::format_to(std::back_inserter(o), "{}_count{{model=\"{}\"}} {}\n", name, model, h.count);
}

// One family with a series per model: `value(model)` is a number, or nullopt to leave the model out.
template <class Value>
void render_per_model(std::string& o, std::string_view name, std::string_view type, std::string_view help,
                      const std::vector<ModelGauges>& models, Value value) {
  fmt::format_to(std::back_inserter(o), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  for (const auto& m : models) {
    if (const std::optional<std::uint64_t> v = value(m)) {
      fmt::format_to(std::back_inserter(o), "{}{{model=\"{}\"}} {}\n", name, prometheus_escape(m.model), *v);
    }
  }
}

// The gauges of each replica: one series per replica for each.
void render_replica_gauges(std::string& o, const std::vector<ReplicaGauges>& replicas) {
  // One gauge per replica each: name, help, value.
  struct ReplicaGauge {
    std::string_view name;
    std::string_view help;
    double (*value)(const ReplicaGauges&);
  };
  static constexpr std::array<ReplicaGauge, 10> kReplicaGauges{{
      {"lm_warden_requests_in_flight", "Requests the warden is relaying now, by replica.",
       [](const ReplicaGauges& r) { return static_cast<double>(r.in_flight); }},
      {"lm_warden_upstream_healthy", "1 when the replica answers its metrics scrape, else 0.",
       [](const ReplicaGauges& r) { return r.healthy ? 1.0 : 0.0; }},
      {"lm_warden_replica_ejected", "1 while outlier ejection keeps the replica out of routing, else 0.",
       [](const ReplicaGauges& r) { return r.ejected ? 1.0 : 0.0; }},
      {"lm_warden_upstream_running", "Requests running on the replica (engine metrics).",
       [](const ReplicaGauges& r) { return r.running; }},
      {"lm_warden_upstream_waiting", "Requests waiting on the replica (engine metrics).",
       [](const ReplicaGauges& r) { return r.waiting; }},
      {"lm_warden_upstream_kv_cache_usage", "KV cache usage of the replica, 0..1 (engine metrics).",
       [](const ReplicaGauges& r) { return r.kv_used; }},
      {"lm_warden_upstream_kv_capacity_tokens",
       "GPU KV cache of the replica in tokens (num_gpu_blocks x block_size; 0 until reported).",
       [](const ReplicaGauges& r) { return static_cast<double>(r.kv_capacity_tokens); }},
      {"lm_warden_upstream_offload_capacity_tokens",
       "Host (CPU) KV offload of the replica in tokens (0: none, or its size in tokens not reported).",
       [](const ReplicaGauges& r) { return static_cast<double>(r.offload_capacity_tokens); }},
      {"lm_warden_active_conversations",
       "Conversations (threads) this warden routed to the replica that are active, by replica.",
       [](const ReplicaGauges& r) { return static_cast<double>(r.conversations); }},
      {"lm_warden_working_set_tokens",
       "Tokens those conversations hold on the replica (each one's last prompt), by replica.",
       [](const ReplicaGauges& r) { return static_cast<double>(r.working_set_tokens); }},
  }};
  for (const auto& g : kReplicaGauges) {
    fmt::format_to(std::back_inserter(o), "# HELP {} {}\n# TYPE {} gauge\n", g.name, g.help, g.name);
    for (const auto& r : replicas) {
      fmt::format_to(std::back_inserter(o), "{}{{model=\"{}\",replica=\"{}\"}} {}\n", g.name,
                     prometheus_escape(r.model), r.replica, g.value(r));
    }
  }
}

}  // namespace

std::string WardenMetrics::render(const std::vector<ReplicaGauges>& replicas,
                                  const std::vector<ModelGauges>& models) const {
  std::string o;
  o.reserve(4096);
  auto header = [&](std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(o), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  header("lm_warden_requests_total", "counter",
         "Requests answered, by model, replica, route and HTTP status.");
  for (const auto& [k, v] : requests_) {
    fmt::format_to(std::back_inserter(o),
                   "lm_warden_requests_total{{model=\"{}\",replica=\"{}\",route=\"{}\",status=\"{}\"}} {}\n",
                   prometheus_escape(std::get<0>(k)), std::get<1>(k), std::get<2>(k), std::get<3>(k), v);
  }
  render_replica_gauges(o, replicas);
  render_kv_metrics(o, replicas);
  header("lm_warden_replica_ejections_total", "counter",
         "Replicas taken out of routing by outlier ejection, by reason: first_byte, stream_stall, "
         "gateway_error, no_progress.");
  for (const auto& [k, v] : ejections_) {
    fmt::format_to(std::back_inserter(o),
                   "lm_warden_replica_ejections_total{{model=\"{}\",replica=\"{}\",reason=\"{}\"}} {}\n",
                   prometheus_escape(std::get<0>(k)), std::get<1>(k), std::get<2>(k), v);
  }
  header("lm_warden_ttfb_seconds", "histogram", "Time to the first response byte relayed to the client.");
  for (const auto& [model, h] : ttfb_) {
    render_histogram(o, "lm_warden_ttfb_seconds", prometheus_escape(model), h);
  }
  header("lm_warden_prompt_tokens_total", "counter",
         "Prompt tokens as the engine counted them: kind=cached (prefix cache hit) or computed.");
  for (const auto& [k, v] : prompt_tokens_) {
    fmt::format_to(std::back_inserter(o), "lm_warden_prompt_tokens_total{{model=\"{}\",kind=\"{}\"}} {}\n",
                   prometheus_escape(k.first), k.second, v);
  }
  header("lm_warden_completion_tokens_total", "counter", "Completion tokens as the engine counted them.");
  for (const auto& [model, v] : completion_tokens_) {
    fmt::format_to(std::back_inserter(o), "lm_warden_completion_tokens_total{{model=\"{}\"}} {}\n",
                   prometheus_escape(model), v);
  }
  header("lm_warden_stream_breaks_total", "counter",
         "Streams cut off after their first byte (the client got an error event), by model and cause: "
         "engine (it broke off), timeout (it went silent), filter (an event too large to relay), shutdown, "
         "stalled (its replica was ejected as stalled).");
  for (const auto& [k, v] : stream_breaks_) {
    fmt::format_to(std::back_inserter(o), "lm_warden_stream_breaks_total{{model=\"{}\",cause=\"{}\"}} {}\n",
                   prometheus_escape(k.first), k.second, v);
  }
  render_per_model(
      o, "lm_warden_prefix_breaks_total", "counter",
      "Requests whose prompt start differed from the previous request of the same thread (a client "
      "that defeats the prefix cache); compactions are counted apart.",
      models, [](const ModelGauges& m) { return std::optional<std::uint64_t>(m.prefix_breaks); });
  render_threads(o, models);
  render_per_model(
      o, "lm_warden_max_model_len", "gauge",
      "The model's context length in tokens, as its engines report it.", models, [](const ModelGauges& m) {
        return m.max_model_len && *m.max_model_len >= 0 ? std::optional<std::uint64_t>(*m.max_model_len)
                                                        : std::nullopt;
      });
  render_queue(o, models);
  render_working_set(o, models);
  header("lm_warden_scrapes_total", "counter", "Scrapes of engine /metrics endpoints.");
  for (const auto& [url, v] : scrapes_) {
    fmt::format_to(std::back_inserter(o), "lm_warden_scrapes_total{{url=\"{}\"}} {}\n",
                   prometheus_escape(url), v);
  }
  header("lm_warden_scrape_errors_total", "counter", "Failed scrapes of engine /metrics endpoints.");
  for (const auto& [url, v] : scrape_errors_) {
    fmt::format_to(std::back_inserter(o), "lm_warden_scrape_errors_total{{url=\"{}\"}} {}\n",
                   prometheus_escape(url), v);
  }
  header("lm_warden_tls_failures_total", "counter",
         "Connections to the TLS listener that never became TLS connections, by kind: plain_http (answered "
         "400), handshake (failed, timed out or closed before it).");
  for (const auto& [kind, v] : tls_failures_) {
    fmt::format_to(std::back_inserter(o), "lm_warden_tls_failures_total{{kind=\"{}\"}} {}\n", kind, v);
  }
  return o;
}

// The threads of the models' sessions: compactions, side requests, subagent threads.
void WardenMetrics::render_threads(std::string& o, const std::vector<ModelGauges>& models) {
  using V = std::optional<std::uint64_t>;
  render_per_model(
      o, "lm_warden_thread_compactions_total", "counter",
      "Threads whose client compacted them (the history replaced by a summary: the system prompt "
      "and tools kept, the prompt halved or less); not prefix breaks.",
      models, [](const ModelGauges& m) { return V(m.thread_compactions); });
  render_per_model(
      o, "lm_warden_side_requests_total", "counter",
      "Requests that belong to no thread (no tools offered in a session whose requests offer "
      "them: a title, a summary, a probe), routed to the session's home without moving anything.",
      models, [](const ModelGauges& m) { return V(m.side_requests); });
  render_per_model(o, "lm_warden_threads", "gauge",
                   "Threads besides the sessions' main threads (subagents) that the warden remembers.",
                   models, [](const ModelGauges& m) { return V(m.threads); });
  render_per_model(o, "lm_warden_threaded_sessions", "gauge",
                   "Sessions with at least one thread besides their main one.", models,
                   [](const ModelGauges& m) { return V(m.threaded_sessions); });
}

// The model's working set against its replicas' caches (gateway/runtime/working_set.hpp): the seed's rule of
// thumb, conversations x context within GPU plus host cache, as lm_warden_model_working_set_tokens >
// lm_warden_model_kv_capacity_tokens + lm_warden_model_offload_capacity_tokens.
void WardenMetrics::render_working_set(std::string& o, const std::vector<ModelGauges>& models) {
  using V = std::optional<std::uint64_t>;
  const auto known = [](const ModelGauges& m, std::uint64_t v) {
    return m.kv_capacity_tokens > 0 ? V(v) : V();
  };
  render_per_model(o, "lm_warden_model_active_conversations", "gauge",
                   "Active conversations (threads) this warden routed to the model's replicas.", models,
                   [](const ModelGauges& m) { return V(m.conversations); });
  render_per_model(
      o, "lm_warden_model_working_set_tokens", "gauge",
      "Tokens those conversations hold (each one's last prompt): the model's working set at this "
      "warden.",
      models, [](const ModelGauges& m) { return V(m.working_set_tokens); });
  render_per_model(
      o, "lm_warden_model_kv_capacity_tokens", "gauge",
      "GPU KV cache of the model's healthy replicas in tokens (absent until the engines reported "
      "it).",
      models, [&](const ModelGauges& m) { return known(m, m.kv_capacity_tokens); });
  render_per_model(
      o, "lm_warden_model_offload_capacity_tokens", "gauge",
      "Host (CPU) KV offload of the model's healthy replicas in tokens (absent until the engines "
      "reported a GPU cache; 0: none, or not reported in tokens).",
      models, [&](const ModelGauges& m) { return known(m, m.offload_capacity_tokens); });
}

namespace {

// Admission's queue by class of work (held now, let in, and their waits) and by tenant (held now).
void render_queue_classes(std::string& o, const std::vector<ModelGauges>& models) {
  auto series = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    fmt::format_to(std::back_inserter(o), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (const auto& m : models) {
      for (std::size_t c = 0; c < core::work_class_count; ++c) {
        fmt::format_to(std::back_inserter(o), "{}{{model=\"{}\",class=\"{}\"}} {}\n", name,
                       prometheus_escape(m.model), core::work_class_name(static_cast<core::WorkClass>(c)),
                       value(m, c));
      }
    }
  };
  series("lm_warden_queue_held", "gauge",
         "Requests admission holds now, by class of work (interactive: a person waits; headless: a fleet).",
         [](const ModelGauges& m, std::size_t c) { return m.queue_held_by_class[c]; });
  series("lm_warden_queue_let_in_total", "counter",
         "Held requests routed after their wait, by class of work.",
         [](const ModelGauges& m, std::size_t c) { return m.queue_let_in_by_class[c]; });
  series("lm_warden_queue_waited_seconds_total", "counter",
         "The sum of the waits of the held requests routed, by class of work.",
         [](const ModelGauges& m, std::size_t c) { return m.queue_waited_s_by_class[c]; });
  constexpr std::string_view by_tenant = "lm_warden_queue_held_by_tenant";
  fmt::format_to(std::back_inserter(o), "# HELP {} {}\n# TYPE {} gauge\n", by_tenant,
                 "Requests admission holds now, by tenant (only tenants holding any).", by_tenant);
  for (const auto& m : models) {
    for (const auto& [tenant, held] : m.queue_held_by_tenant) {
      fmt::format_to(std::back_inserter(o), "{}{{model=\"{}\",tenant=\"{}\"}} {}\n", by_tenant,
                     prometheus_escape(m.model), prometheus_escape(tenant), held);
    }
  }
}

}  // namespace

// Admission's queue: its length now, the waits of the requests it let go, and how requests left it.
void WardenMetrics::render_queue(std::string& o, const std::vector<ModelGauges>& models) const {
  auto header = [&](std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(o), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  auto per_model = [&](std::string_view name, const std::map<std::string, std::uint64_t>& values) {
    for (const auto& [model, v] : values) {
      fmt::format_to(std::back_inserter(o), "{}{{model=\"{}\"}} {}\n", name, prometheus_escape(model), v);
    }
  };
  render_per_model(
      o, "lm_warden_queue_length", "gauge",
      "Requests admission holds back now (route queued), waiting for room on the model's replicas.", models,
      [](const ModelGauges& m) { return std::optional<std::uint64_t>(m.queue_length); });
  render_per_model(
      o, "lm_warden_queue_task_starts", "gauge",
      "Of the requests admission holds now, the first requests of agent tasks (a task start waits "
      "while the threads under way fill the caches; a task under way is never held).",
      models, [](const ModelGauges& m) { return std::optional<std::uint64_t>(m.queue_task_starts); });
  render_queue_classes(o, models);
  header("lm_warden_queue_wait_seconds", "histogram",
         "How long admission held a request before it was routed.");
  for (const auto& [model, h] : queue_wait_) {
    render_histogram(o, "lm_warden_queue_wait_seconds", prometheus_escape(model), h);
  }
  header("lm_warden_queue_admitted_total", "counter", "Held requests routed after their wait.");
  per_model("lm_warden_queue_admitted_total", queue_admitted_);
  header("lm_warden_queue_rejected_total", "counter",
         "Requests admission refused with 503, by model and reason: full (max_queue requests waiting), "
         "draining (the warden shut down while they waited).");
  for (const auto& [k, v] : queue_rejected_) {
    fmt::format_to(std::back_inserter(o), "lm_warden_queue_rejected_total{{model=\"{}\",reason=\"{}\"}} {}\n",
                   prometheus_escape(k.first), k.second, v);
  }
  header("lm_warden_queue_abandoned_total", "counter",
         "Held requests whose client went away while they waited (never sent to an engine).");
  per_model("lm_warden_queue_abandoned_total", queue_abandoned_);
}

}  // namespace warden::gateway
