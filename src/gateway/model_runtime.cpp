#include "gateway/model_runtime.hpp"

#include <algorithm>
#include <cmath>

namespace warden::gateway {

void CounterDelta::observe(double value) {
  if (!std::isfinite(value) || value < 0) {
    return;  // a hostile or broken engine must not poison the rate
  }
  if (last_) {
    delta_ += value >= *last_ ? value - *last_ : value;
  }
  last_ = value;
}

std::optional<double> ReplicaRuntime::prefix_hit_rate() const {
  const double q = prefix_queries.delta();
  if (q <= 0) {
    return std::nullopt;
  }
  return std::clamp(prefix_hits.delta() / q, 0.0, 1.0);
}

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

ModelRuntime::ModelRuntime(const ModelConfig& config, int unhealthy_after)
    : config_(&config),
      unhealthy_after_(std::max(1, unhealthy_after)),
      router_(core::router_config(config.routing)),
      replicas_(static_cast<std::size_t>(config.replica_count())) {}

const std::vector<core::ReplicaMetrics>& ModelRuntime::metrics() {
  metrics_.resize(replicas_.size());
  for (std::size_t i = 0; i < replicas_.size(); ++i) {
    metrics_[i] = replicas_[i].metrics;
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
  for (int i = 0; i < config_->replica_count(); ++i) {
    if (config_->replica_url(i).text == url.text) {
      out.push_back(i);
    }
  }
  return out;
}

namespace {

std::uint32_t gauge_count(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v) || *v < 0) {
    return 0;
  }
  return static_cast<std::uint32_t>(std::min(*v, 1e9));
}

// Prompt tokens the rank computed (queried minus served from its prefix cache); nullopt unless both
// counters are there and make sense.
std::optional<std::uint64_t> computed_tokens(const protocol::VllmRank& rank) {
  if (!rank.prefix_cache_queries_total || !rank.prefix_cache_hits_total) {
    return std::nullopt;
  }
  const double queries = *rank.prefix_cache_queries_total;
  const double hits = *rank.prefix_cache_hits_total;
  if (!std::isfinite(queries) || !std::isfinite(hits) || hits < 0 || queries < hits || queries > 1e18) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(queries - hits);
}

// The rank's prefill rate, from the same counters and its waiting requests (core::PrefillRate).
void observe_prefill(ReplicaRuntime& r, const protocol::VllmRank& rank, core::Time now) {
  if (!r.metrics.computed_tokens) {
    return;  // the counters are missing or make no sense (computed_tokens checked them)
  }
  r.prefill_rate.observe(now, static_cast<std::uint64_t>(*rank.prefix_cache_queries_total),
                         static_cast<std::uint64_t>(*rank.prefix_cache_hits_total), r.metrics.waiting);
  r.metrics.prefill_tokens_per_second = r.prefill_rate.tokens_per_second();
}

}  // namespace

void ModelRuntime::apply_rank(ReplicaRuntime& r, const protocol::VllmRank& rank) {
  r.metrics.running = gauge_count(rank.num_requests_running);
  r.metrics.waiting = gauge_count(rank.num_requests_waiting);
  double kv = rank.kv_cache_usage_perc.value_or(0.0);
  r.metrics.kv_usage = std::isfinite(kv) ? std::clamp(kv, 0.0, 1.0) : 0.0;
  if (rank.prefix_cache_hits_total) {
    r.prefix_hits.observe(*rank.prefix_cache_hits_total);
  }
  if (rank.prefix_cache_queries_total) {
    r.prefix_queries.observe(*rank.prefix_cache_queries_total);
  }
  r.metrics.computed_tokens = computed_tokens(rank);
  if (rank.num_gpu_blocks && *rank.num_gpu_blocks > 0) {
    r.num_gpu_blocks = rank.num_gpu_blocks;
  }
  if (rank.block_size && *rank.block_size > 0) {
    r.block_size = rank.block_size;
  }
  if (r.num_gpu_blocks && r.block_size && *r.num_gpu_blocks < (std::int64_t{1} << 40) &&
      *r.block_size < (1 << 20)) {
    r.metrics.kv_capacity_tokens = static_cast<std::uint64_t>(*r.num_gpu_blocks * *r.block_size);
  }
}

bool ModelRuntime::apply_scrape(const UpstreamUrl& url, const protocol::VllmScrape& scrape, core::Time now) {
  const auto indices = replicas_of(url);
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
    if (config_->data_parallel) {
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
      apply_rank(r, *rank);
      observe_prefill(r, *rank, now);
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

}  // namespace warden::gateway
