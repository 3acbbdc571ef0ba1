#include "gateway/runtime/model_runtime.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace warden::gateway {

protocol::Result<protocol::VllmScrape> scrape_for_model(std::string_view body,
                                                        std::string_view served_model_name) {
  if (!served_model_name.empty()) {
    auto mine = protocol::parse_vllm_metrics(body, served_model_name);
    if (!mine || !mine->ranks.empty()) {
      return mine;
    }
  }
  // No series names this model (an engine serving it under another name): take what is there.
  return protocol::parse_vllm_metrics(body);
}

ModelRuntime::ModelRuntime(const ModelConfig& config, int unhealthy_after, boost::asio::any_io_executor io,
                           core::SplitMixRng& rng)
    : config_(config),
      unhealthy_after_(std::max(1, unhealthy_after)),
      replicas_(static_cast<std::size_t>(config.replica_count())),
      outliers_(replicas_.size()),
      rng_(rng),
      queue_(
          std::move(io),
          [this](const core::RequestFacts& facts) {
            return router_.route(facts, metrics(), std::chrono::steady_clock::now().time_since_epoch(), rng_);
          },
          [this](std::uint64_t tenant) { return router_.tasks_of_tenant(tenant); }) {
  // The configuration reader accepts registered policy names only (config.cpp); a configuration built
  // elsewhere with another name keeps its other settings under the default policy, said in the log.
  if (!set_routing(config.routing)) {
    spdlog::error("model {}: unknown routing policy '{}'; routing with '{}'", config.name,
                  config.routing.policy, core::RoutingConfig{}.policy);
    core::RoutingConfig routing = config.routing;
    routing.policy = core::RoutingConfig{}.policy;
    set_routing(routing);
  }
}

bool ModelRuntime::set_routing(const core::RoutingConfig& routing) {
  if (!router_.set_routing(routing)) {
    return false;
  }
  queue_.configure(router_.routing_config());
  retry_queued();
  return true;
}

void ModelRuntime::retry_queued() {
  if (queue_.size() > 0) {
    queue_.retry(AdmissionQueue::Clock::now());
  }
}

const std::vector<core::ReplicaMetrics>& ModelRuntime::metrics(core::Time now) {
  metrics_.resize(replicas_.size());
  std::size_t answering = 0;
  std::size_t left = 0;
  for (std::size_t i = 0; i < replicas_.size(); ++i) {
    metrics_[i] = replicas_[i].metrics;
    metrics_[i].kv = replicas_[i].kv.routing_index();
    answering += metrics_[i].healthy ? 1 : 0;
    metrics_[i].healthy = metrics_[i].healthy && outliers_.routable(static_cast<int>(i), now);
    left += metrics_[i].healthy ? 1 : 0;
  }
  if (core::panic(outliers_.config(), left, answering)) {
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
      metrics_[i].healthy = replicas_[i].metrics.healthy;
    }
  }
  return metrics_;
}

void ModelRuntime::set_max_model_len(const UpstreamUrl& url, std::optional<std::int64_t> value) {
  std::erase_if(max_model_len_, [&](const auto& e) { return e.first == url.text; });
  if (value) {
    max_model_len_.emplace_back(url.text, *value);
  }
}

std::optional<std::int64_t> ModelRuntime::max_model_len() const {
  std::optional<std::int64_t> out;
  for (const auto& [url, len] : max_model_len_) {
    out = out ? std::min(*out, len) : len;
  }
  return out;
}

std::vector<int> ModelRuntime::replicas_of(const UpstreamUrl& url) const {
  std::vector<int> out;
  for (int i = 0; i < config_.replica_count(); ++i) {
    if (config_.replica_url(i).text == url.text) {
      out.push_back(i);
    }
  }
  return out;
}

namespace {

// What the rank's series say, as the routing core takes an engine's report.
core::ReplicaReport vllm_report(const protocol::VllmRank& rank) {
  return {rank.num_requests_running, rank.num_requests_waiting,
          rank.kv_cache_usage_perc,  rank.num_gpu_blocks,
          rank.block_size,           rank.prefix_cache_queries_total,
          rank.all_prefix_hits(),    rank.num_preemptions_total,
          rank.kv_offloading_gib,    rank.num_cpu_blocks,
          rank.kv_cache_memory_bytes};
}

}  // namespace

void ModelRuntime::apply_rank(int replica, const protocol::VllmRank& rank, std::uint64_t backlog,
                              core::Time now) {
  ReplicaRuntime& r = replicas_[static_cast<std::size_t>(replica)];
  if (const auto hits = rank.all_prefix_hits()) {
    r.prefix_hits.observe(*hits);
  }
  if (rank.num_preemptions_total) {
    r.preemptions.observe(*rank.num_preemptions_total);
  }
  if (rank.prefix_cache_queries_total) {
    r.prefix_queries.observe(*rank.prefix_cache_queries_total);
  }
  core::observe_report(r.metrics, r.prefill_rate, vllm_report(rank), now);
  // Work the engine did that its events must have told (a stream silent meanwhile is stale).
  r.kv.observe_computed(r.prefix_queries.delta() - r.prefix_hits.delta(), now);
  if (rank.block_size) {  // the rank's cache_config_info came with this scrape
    r.offload_gib = rank.kv_offloading_gib.value_or(0.0);
  }
  std::optional<double> tokens;
  if (rank.prompt_tokens_total || rank.generation_tokens_total) {
    tokens = rank.prompt_tokens_total.value_or(0) + rank.generation_tokens_total.value_or(0);
  }
  // The warden's own requests there without a first token are work the engine has, whatever it reports,
  // and their prompts are what may keep its counters still for a while. An engine without token counters
  // is judged by those requests alone: their first tokens are its progress.
  const double rate = r.metrics.prefill_tokens_per_second;
  if (tokens) {
    outliers_.observe_progress(replica, rank.num_requests_running, tokens, backlog, rate, now);
  } else {
    outliers_.observe_progress(replica, std::nullopt, static_cast<double>(r.first_tokens), backlog, rate,
                               now);
  }
}

core::Decision ModelRuntime::route(const core::RequestFacts& facts, std::optional<int> avoid, bool counted,
                                   core::Rng& rng, core::Time now) {
  // The live view as is; a copy only to avoid a replica.
  const std::vector<core::ReplicaMetrics>& live = metrics(now);
  std::vector<core::ReplicaMetrics> without_failed;
  if (avoid && *avoid >= 0 && static_cast<std::size_t>(*avoid) < live.size()) {
    without_failed = live;
    without_failed[static_cast<std::size_t>(*avoid)].healthy = false;
  }
  const std::vector<core::ReplicaMetrics>& view = without_failed.empty() ? live : without_failed;
  return counted ? router_.route(facts, view, now, rng) : router_.route_uncounted(facts, view, now, rng);
}

void ModelRuntime::finish(int replica) {
  router_.finish(static_cast<core::ReplicaIndex>(replica));
  retry_queued();
}

void ModelRuntime::first_token(const core::Decision& decision) {
  router_.first_token(decision);
  if (decision.replica && *decision.replica < replicas_.size()) {
    ++replicas_[*decision.replica].first_tokens;
  }
}

bool ModelRuntime::apply_scrape(const UpstreamUrl& url, const protocol::VllmScrape& scrape, core::Time now) {
  const auto indices = replicas_of(url);
  const std::vector<std::uint64_t> backlog = router_.view(now).prefill_backlog_tokens;
  bool recovered = false;
  for (int i : indices) {
    ReplicaRuntime& r = replicas_[static_cast<std::size_t>(i)];
    recovered = recovered || !r.metrics.healthy;
    r.consecutive_failures = 0;
    r.metrics.healthy = true;
    r.scraped = true;
    r.last_error.clear();
    r.metrics.scrape_generation += 1;
    const protocol::VllmRank* rank = nullptr;
    if (config_.data_parallel) {
      rank = scrape.rank(i);
    } else if (scrape.ranks.size() == 1) {
      rank = &scrape.ranks.front();  // one engine per server: whatever its engine label says
    } else {
      rank = scrape.rank(i);
      if (!rank && !scrape.ranks.empty()) {
        rank = &scrape.ranks.front();
      }
    }
    if (rank) {
      apply_rank(i, *rank,
                 static_cast<std::size_t>(i) < backlog.size() ? backlog[static_cast<std::size_t>(i)] : 0,
                 now);
    }
  }
  return recovered;
}

bool ModelRuntime::replica_failed(int replica, const std::string& why) {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) {
    return false;
  }
  ReplicaRuntime& r = replicas_[static_cast<std::size_t>(replica)];
  r.consecutive_failures += 1;
  r.last_error = why;
  if (r.consecutive_failures >= unhealthy_after_ && r.metrics.healthy) {
    r.metrics.healthy = false;
    r.metrics.running = 0;
    r.metrics.waiting = 0;
    return true;
  }
  return false;
}

bool ModelRuntime::url_failed(const UpstreamUrl& url, const std::string& why) {
  bool changed = false;
  for (int i : replicas_of(url)) {
    changed = replica_failed(i, why) || changed;
  }
  return changed;
}

void ModelRuntime::engine(const std::vector<int>& replicas, bool up, const std::string& why) {
  for (int i : replicas) {
    if (i < 0 || i >= static_cast<int>(replicas_.size())) {
      continue;
    }
    ReplicaRuntime& r = replicas_[static_cast<std::size_t>(i)];
    r.metrics.healthy = up;
    r.consecutive_failures = up ? 0 : unhealthy_after_;
    r.last_error = up ? std::string() : "engine " + why;
    if (up) {
      outliers_.forget(i);  // a new engine process: what the old one failed is forgotten
    }
  }
}

void ModelRuntime::unscraped(const std::string& why) {
  for (ReplicaRuntime& r : replicas_) {
    r.unscraped(why);
  }
}

void ModelRuntime::set_peer_load(int replica, std::uint32_t in_flight, std::uint32_t conversations,
                                 std::uint64_t held_tokens, std::uint32_t wardens) {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) {
    return;
  }
  core::ReplicaMetrics& m = replicas_[static_cast<std::size_t>(replica)].metrics;
  m.peer_in_flight = in_flight;
  m.peer_active_conversations = conversations;
  m.peer_held_tokens = held_tokens;
  m.peer_wardens = wardens;
}

KvFeed* ModelRuntime::kv_feed(int replica) {
  return replica >= 0 && replica < static_cast<int>(replicas_.size())
             ? &replicas_[static_cast<std::size_t>(replica)].kv
             : nullptr;
}

}  // namespace warden::gateway
