// What the warden knows of one replica (ReplicaSet keeps one per replica, and changes it only through its
// own operations): the figures its scrapes report, its health, its prefix-cache counters since the warden
// started, what its KV cache events say it holds. Outlier ejection's state of it is ReplicaOutliers'.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/prefill_rate.hpp"
#include "core/router.hpp"
#include "gateway/runtime/kv_feed.hpp"

namespace warden::gateway {

// A monotonically growing total built from an engine counter that may reset (engine restart): the
// delta since the first observation, counting a drop as a restart from zero.
class CounterDelta {
 public:
  void observe(double value);
  double delta() const { return delta_; }
  bool seen() const { return last_.has_value(); }

 private:
  std::optional<double> last_;
  double delta_ = 0;
};

struct ReplicaRuntime {
  core::ReplicaMetrics metrics;  // what the Router reads (healthy, running, waiting, kv, capacity)
  int consecutive_failures = 0;
  bool scraped = false;  // at least one successful scrape
  std::string last_error;
  CounterDelta prefix_hits;  // the GPU cache's hits and those loaded through a KV connector
  CounterDelta prefix_queries;
  CounterDelta preemptions;        // requests the engine preempted for KV blocks: a replica thrashing
  core::PrefillRate prefill_rate;  // fills metrics.prefill_tokens_per_second (cost-aware spill)
  // First tokens of the warden's own requests there: the progress of an engine without token counters.
  std::uint64_t first_tokens = 0;
  // GiB of host memory the engine offloads KV to (vllm:cache_config_info kv_offloading_size; 0 = none):
  // shown even when its size in tokens (metrics.offload_capacity_tokens) is not reported.
  double offload_gib = 0;
  // What its engine's KV cache events say its prefix cache holds (metrics.kv while they are exact).
  KvFeed kv;

  // Prefix-cache hit rate since the warden started (nullopt before any query was counted).
  std::optional<double> prefix_hit_rate() const;
  // Takes no request until its first successful scrape; `why` is its last error meanwhile.
  void unscraped(std::string why) {
    metrics.healthy = false;
    last_error = std::move(why);
  }
};

}  // namespace warden::gateway
