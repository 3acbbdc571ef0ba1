#include "gateway/admin/admin_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <cmath>
#include <ctime>

#include "base/parse.hpp"
#include "gateway/runtime/warden_metrics.hpp"
#include "gateway/runtime/working_set.hpp"
#include "settings/routing.hpp"

namespace warden::gateway {

namespace json = boost::json;

std::string iso8601_utc(std::int64_t unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

json::value optional_number(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) {
    return nullptr;
  }
  return *v;
}

}  // namespace

json::array threaded_sessions_json(ModelRuntime& model, core::Time now, std::size_t limit,
                                   std::size_t offset) {
  const auto ago = [&](core::Time t) { return std::chrono::duration<double>(now - t).count(); };
  const auto hex = [](std::uint64_t key) { return fmt::format("{:016x}", key); };
  json::array out;
  for (const core::SessionThreadsView& s : model.router().threaded_sessions(limit, now, offset)) {
    json::array threads;
    for (const core::ThreadView& t : s.threads) {
      const PrefixWatch::ThreadCounts counts = model.prefix_watch().counts(t.key);
      json::object thread;
      thread["thread"] = hex(t.key);
      thread["main"] = t.key == s.session;
      thread["parent"] = t.parent != 0 ? json::value(hex(t.parent)) : json::value(nullptr);
      thread["home"] = t.home ? json::value(*t.home) : json::value(nullptr);
      thread["last_seen_s_ago"] = ago(t.last_seen);
      thread["prefix_breaks"] = counts.breaks;
      thread["compactions"] = counts.compactions;
      threads.push_back(std::move(thread));
    }
    json::object session;
    session["session"] = hex(s.session);
    session["last_seen_s_ago"] = ago(s.last_seen);
    // The class of work and tenant of its task under way (null: none under way).
    const auto owner = model.router().task_owner(s.session);
    session["class"] = owner ? json::value(core::work_class_name(owner->work_class)) : json::value(nullptr);
    session["tenant"] = owner && owner->tenant != 0 ? json::value(hex(owner->tenant)) : json::value(nullptr);
    session["threads"] = std::move(threads);
    out.push_back(std::move(session));
  }
  return out;
}

json::array held_requests_json(const AdmissionQueue& queue, AdmissionQueue::Clock::time_point now) {
  json::array out;
  for (const AdmissionQueue::HeldRequest& h : queue.held(now)) {
    json::object r;
    r["class"] = core::work_class_name(h.work_class);
    r["tenant"] = h.tenant != 0 ? json::value(fmt::format("{:016x}", h.tenant)) : json::value(nullptr);
    r["weight"] = h.weight;
    r["waited_s"] = h.waited_s;
    out.push_back(std::move(r));
  }
  return out;
}

// A replica's outlier ejection (core/outlier.hpp): null while it is in routing.
json::value ejection_json(const core::OutlierState& o, core::Time now) {
  if (!o.ejected()) {
    return nullptr;
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(o.until() - now);
  const auto until_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()) +
                        left;
  json::object e;
  e["reason"] = core::outlier_reason_name(o.reason());
  e["until"] = iso8601_utc(std::chrono::duration_cast<std::chrono::seconds>(until_ms).count());
  e["until_unix_ms"] = until_ms.count();
  e["ejections"] = o.ejections();  // in a row: the backoff is base_ejection times this, capped
  e["probing"] = o.probing();      // its one probe request is out
  return e;
}

namespace {

// The model's working set against what its healthy replicas hold (gateway/runtime/working_set.hpp), with the
// conversations other wardens sharing state report.
json::object working_set_json(const WorkingSet& ws) {
  json::object out;
  out["conversations"] = ws.conversations;
  out["held_tokens"] = ws.held_tokens;
  out["typical_tokens"] = ws.typical_tokens();
  out["gpu_capacity_tokens"] = ws.gpu_tokens;
  out["host_capacity_tokens"] = ws.host_tokens;
  out["capacity_tokens"] = ws.capacity_tokens();
  return out;
}

// A replica's KV cache events (runtime/kv_feed.hpp): null when the warden does not listen to them.
// `cache_use` is what its prefix cache holds against its capacity (the events' resident tokens over the
// scraped GPU KV capacity; null until both are known).
json::value kv_events_json(const ReplicaRuntime& r, core::Time now) {
  const std::optional<KvReplicaGauges> g = kv_gauges(r.kv);
  if (!g) {
    return nullptr;
  }
  const core::KvIndexStats stats = r.kv.index()->stats();
  json::object out;
  out["live"] = g->exact;
  out["connected"] = g->connected;
  out["complete"] = g->complete;
  out["gap"] = r.kv.gap_open();
  out["stale"] = r.kv.stale();
  out["resident_tokens"] = g->resident_tokens;
  const std::uint64_t capacity = r.metrics.kv_capacity_tokens;
  out["cache_use"] = capacity > 0 && r.kv.started()
                         ? json::value(std::min(1.0, static_cast<double>(g->resident_tokens) / capacity))
                         : json::value(nullptr);
  out["gpu_blocks"] = stats.gpu_blocks;
  out["cpu_blocks"] = stats.cpu_blocks;
  out["block_size"] = stats.block_size;
  out["threads"] = stats.threads;
  out["index_bytes"] = g->index_bytes;
  out["idle_seconds"] = optional_number(r.kv.idle_seconds(now));
  out["batches"] = g->counts.batches;
  out["decode_errors"] = g->counts.decode_errors;
  out["gaps"] = g->counts.gaps;
  out["replays"] = g->counts.replays;
  out["clears"] = g->counts.clears;
  out["fallbacks"] = g->counts.fallbacks;
  out["lag_seconds"] = g->counts.lag_last;
  return out;
}

// One replica's row of the card: what it is, its health and ejection, the Router's counters and sessions
// on it, its engine's figures and its KV cache events.
json::object replica_row(const ModelRuntime& model, const core::RouterView& view, int i, core::Time now) {
  const auto idx = static_cast<std::size_t>(i);
  const ReplicaRuntime& r = model.replica_set().replicas()[idx];
  const core::ReplicaCounters c = idx < view.counters.size() ? view.counters[idx] : core::ReplicaCounters{};
  const core::ReplicaSessions s = idx < view.sessions.size() ? view.sessions[idx] : core::ReplicaSessions{};
  json::object row;
  row["index"] = i;
  row["url"] = model.config().replica_url(i).text;
  row["healthy"] = r.metrics.healthy;
  row["scraped"] = r.scraped;
  row["last_error"] = r.last_error.empty() ? json::value(nullptr) : json::value(r.last_error);
  row["ejected"] = model.replica_set().outliers().state(i).ejected();
  row["ejection"] = ejection_json(model.replica_set().outliers().state(i), now);
  row["in_flight"] = c.in_flight;
  row["new"] = c.new_conversations;
  row["sticky"] = c.sticky;
  row["spilled_in"] = c.spilled_in;
  row["client_pinned"] = c.client_pinned;
  row["balanced"] = c.balanced;
  row["tasks_under_way"] = idx < view.tasks_under_way.size() ? view.tasks_under_way[idx] : 0U;
  row["failover"] = c.failover;
  row["rehomed_in"] = c.rehomed_in;
  row["prefill_tokens_per_second"] = r.metrics.prefill_tokens_per_second;
  row["running"] = r.metrics.running;
  row["waiting"] = r.metrics.waiting;
  row["kv_used"] = r.metrics.kv_usage;
  row["prefix_hit_rate"] = optional_number(r.prefix_hit_rate());
  row["prefix_hits"] = r.prefix_hits.delta();
  row["prefix_queries"] = r.prefix_queries.delta();
  row["preemptions"] = r.preemptions.delta();
  row["kv_capacity_tokens"] = r.metrics.kv_capacity_tokens;
  row["offload_capacity_tokens"] = r.metrics.offload_capacity_tokens;
  row["offload_gib"] = r.offload_gib;
  row["active_conversations"] = s.active_conversations;
  row["held_tokens"] = s.held_tokens;
  // What the other wardens sharing state report for this replica (0 without shared state).
  row["peer_active_conversations"] = r.metrics.peer_active_conversations;
  row["peer_held_tokens"] = r.metrics.peer_held_tokens;
  row["kv_events"] = kv_events_json(r, now);
  return row;
}

// Every routing setting as the table writes it (settings/routing.hpp), then what the card derives: the
// resolved threshold, the tasks under way, the queue, the counters.
json::object routing_card(const core::RouterView& view, HeldRequests held, std::uint64_t in_flight) {
  json::object routing = settings::routing_json(view.routing);
  routing["spill_threshold_resolved"] = view.spill_threshold;
  routing["spill_label"] = view.spill_label;
  std::uint64_t tasks = 0;
  for (const std::uint32_t n : view.tasks_under_way) {
    tasks += n;
  }
  json::object& task_admission = routing["task_admission"].as_object();
  task_admission["task_tokens"] = view.task_tokens;
  task_admission["tasks_under_way"] = tasks;
  routing["sticky_percent"] = optional_number(view.sticky_percent);
  routing["in_flight"] = in_flight;
  routing["live_sessions"] = view.live_sessions;
  routing["unrouted"] = view.unrouted;
  json::object& admission = routing["admission"].as_object();
  admission["queued"] = held.requests;
  admission["queued_task_starts"] = held.task_starts;
  admission["held_total"] = view.queued;
  return routing;
}

}  // namespace

json::object model_card(ModelRuntime& model, core::Time now, std::int64_t since_unix, HeldRequests held) {
  const ModelConfig& cfg = model.config();
  const core::RouterView view = model.view(now);
  json::object out;
  out["name"] = cfg.name;
  out["served_model_name"] = cfg.served_model_name;
  out["mode"] = cfg.data_parallel ? "data_parallel" : "urls";
  out["max_num_seqs"] = view.routing.max_num_seqs;
  out["replica_count"] = cfg.replica_count();
  out["since"] = iso8601_utc(since_unix);
  out["since_unix"] = since_unix;
  const std::optional<std::int64_t> max_model_len = model.max_model_len();
  out["max_model_len"] = max_model_len ? json::value(*max_model_len) : json::value(nullptr);
  out["fit_max_tokens"] = cfg.fit_max_tokens;
  out["normalize_prompt"] = cfg.normalize_prompt;
  out["prefix_breaks"] = model.prefix_watch().breaks();
  out["thread_compactions"] = model.prefix_watch().compactions();
  out["side_requests"] = model.prefix_watch().side_requests();
  out["threads"] = view.threads;
  out["threaded_sessions"] = view.threaded_sessions;
  out["sessions"] = threaded_sessions_json(model, now, kCardSessions);
  out["held"] = held_requests_json(model.queue(), AdmissionQueue::Clock::time_point(now));

  json::array replicas;
  int healthy = 0;
  std::uint64_t in_flight = 0;
  for (int i = 0; i < cfg.replica_count(); ++i) {
    json::object row = replica_row(model, view, i, now);
    healthy += row["healthy"].as_bool() ? 1 : 0;
    in_flight += row["in_flight"].to_number<std::uint64_t>();
    replicas.push_back(std::move(row));
  }
  out["healthy_replicas"] = healthy;
  out["working_set"] = working_set_json(add_up(replica_working_sets(model, view, true)));
  json::object routing = routing_card(view, held, in_flight);
  routing["since"] = iso8601_utc(since_unix);
  routing["replicas"] = std::move(replicas);
  out["routing"] = std::move(routing);
  return out;
}

json::object stats_json(std::string_view model, const StatsSeries& series, std::int64_t window_s) {
  json::array t, cached, computed, completion, requests, ttfb_sum, ttfb_count;
  for (const auto& b : series.buckets) {
    t.push_back(b.second);
    cached.push_back(b.prompt_cached);
    computed.push_back(b.prompt_computed);
    completion.push_back(b.completion);
    requests.push_back(b.requests);
    ttfb_sum.push_back(b.ttfb_sum);
    ttfb_count.push_back(b.ttfb_count);
  }
  json::object cols;
  cols["t"] = std::move(t);
  cols["prompt_cached"] = std::move(cached);
  cols["prompt_computed"] = std::move(computed);
  cols["completion"] = std::move(completion);
  cols["requests"] = std::move(requests);
  cols["ttfb_sum"] = std::move(ttfb_sum);
  cols["ttfb_count"] = std::move(ttfb_count);

  const StatsSummary& s = series.summary;
  json::object summary;
  summary["cache_hit_rate"] = optional_number(s.cache_hit_rate());
  summary["prompt_cached"] = s.prompt_cached;
  summary["prompt_computed"] = s.prompt_computed;
  summary["completion"] = s.completion;
  summary["requests"] = s.requests;
  summary["ttfb_avg_s"] = optional_number(s.ttfb_avg());

  json::object out;
  out["model"] = model;
  out["window"] = window_s;
  out["step"] = 1;
  out["start"] = series.start;
  out["end"] = series.end;
  out["now"] = series.end;
  out["series"] = std::move(cols);
  out["summary"] = std::move(summary);
  return out;
}

json::object v1_models_json(const Config& config, std::int64_t created_unix) {
  json::array data;
  for (const auto& m : config.models) {
    json::object e;
    e["id"] = m.name;
    e["object"] = "model";
    e["type"] = "model";  // Anthropic's shape
    e["display_name"] = m.name;
    e["created"] = created_unix;
    e["created_at"] = iso8601_utc(created_unix);
    e["owned_by"] = "lm-warden";
    e["root"] = m.served_model_name;
    e["max_model_len"] = nullptr;
    data.push_back(std::move(e));
  }
  json::object out;
  out["object"] = "list";
  out["has_more"] = false;
  out["first_id"] = config.models.empty() ? json::value(nullptr) : json::value(config.models.front().name);
  out["last_id"] = config.models.empty() ? json::value(nullptr) : json::value(config.models.back().name);
  out["data"] = std::move(data);
  return out;
}

}  // namespace warden::gateway
