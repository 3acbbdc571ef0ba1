#include "gateway/runtime/replica_set.hpp"

#include <algorithm>

#include "core/replica_report.hpp"

namespace warden::gateway {

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

ReplicaSet::ReplicaSet(std::size_t count, int unhealthy_after)
    : unhealthy_after_(std::max(1, unhealthy_after)), replicas_(count), outliers_(count) {}

ReplicaRuntime* ReplicaSet::at(int replica) {
  return replica >= 0 && static_cast<std::size_t>(replica) < replicas_.size()
             ? &replicas_[static_cast<std::size_t>(replica)]
             : nullptr;
}

const std::vector<core::ReplicaMetrics>& ReplicaSet::metrics(core::Time now) {
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

void ReplicaSet::apply_rank(int replica, const protocol::VllmRank& rank, std::uint64_t backlog,
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

bool ReplicaSet::apply_scrape(const std::vector<int>& indices, bool data_parallel,
                              const protocol::VllmScrape& scrape, const std::vector<std::uint64_t>& backlog,
                              core::Time now) {
  bool recovered = false;
  for (int i : indices) {
    ReplicaRuntime* r = at(i);
    if (!r) {
      continue;
    }
    recovered = recovered || !r->metrics.healthy;
    r->consecutive_failures = 0;
    r->metrics.healthy = true;
    r->scraped = true;
    r->last_error.clear();
    r->metrics.scrape_generation += 1;
    const protocol::VllmRank* rank = nullptr;
    if (data_parallel) {
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

bool ReplicaSet::replica_failed(int replica, const std::string& why) {
  ReplicaRuntime* r = at(replica);
  if (!r) {
    return false;
  }
  r->consecutive_failures += 1;
  r->last_error = why;
  if (r->consecutive_failures >= unhealthy_after_ && r->metrics.healthy) {
    r->metrics.healthy = false;
    r->metrics.running = 0;
    r->metrics.waiting = 0;
    return true;
  }
  return false;
}

bool ReplicaSet::failed(const std::vector<int>& indices, const std::string& why) {
  bool changed = false;
  for (int i : indices) {
    changed = replica_failed(i, why) || changed;
  }
  return changed;
}

void ReplicaSet::engine(const std::vector<int>& replicas, bool up, const std::string& why) {
  for (int i : replicas) {
    ReplicaRuntime* r = at(i);
    if (!r) {
      continue;
    }
    r->metrics.healthy = up;
    r->consecutive_failures = up ? 0 : unhealthy_after_;
    r->last_error = up ? std::string() : "engine " + why;
    if (up) {
      outliers_.forget(i);  // a new engine process: what the old one failed is forgotten
    }
  }
}

void ReplicaSet::unscraped(const std::string& why) {
  for (ReplicaRuntime& r : replicas_) {
    r.unscraped(why);
  }
}

void ReplicaSet::set_peer_load(int replica, std::uint32_t in_flight, std::uint32_t conversations,
                               std::uint64_t held_tokens, std::uint32_t wardens) {
  if (ReplicaRuntime* r = at(replica)) {
    r->metrics.peer_in_flight = in_flight;
    r->metrics.peer_active_conversations = conversations;
    r->metrics.peer_held_tokens = held_tokens;
    r->metrics.peer_wardens = wardens;
  }
}

KvFeed* ReplicaSet::kv_feed(int replica) {
  ReplicaRuntime* r = at(replica);
  return r ? &r->kv : nullptr;
}

void ReplicaSet::sent(int replica, const core::Decision& decision) {
  if (ReplicaRuntime* r = at(replica)) {
    r->kv.sent(decision.thread_key, decision.thread_anew);
  }
}

void ReplicaSet::first_token(int replica) {
  if (ReplicaRuntime* r = at(replica)) {
    ++r->first_tokens;
  }
}

void ReplicaSet::remap(const core::ReplicaRemap& remap) {
  ReplicaRuntime fresh;
  fresh.unscraped("added by a reload, not scraped yet");
  replicas_ = core::remap_values(remap, std::move(replicas_), fresh);
  outliers_.remap(remap);
}

}  // namespace warden::gateway
