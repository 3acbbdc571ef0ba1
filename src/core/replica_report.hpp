#pragma once
// What a replica's engine reported at one scrape, and the one function that keeps the routing view of the
// replica current from it. `serve` maps vLLM's Prometheus text to a ReplicaReport (gateway/model_runtime),
// `simulate` the engine model's counters (whatif/driver), so both feed the Router the same way. Pure.

#include <cstdint>
#include <optional>

#include "core/prefill_rate.hpp"
#include "core/router.hpp"
#include "core/types.hpp"

namespace warden::core {

/// One engine's figures at one scrape, as reported (untrusted: validated by observe_report). Gauges are
/// the values now, counters totals since the engine started; nullopt = not reported.
struct ReplicaReport {
  std::optional<double> running;               ///< vllm:num_requests_running
  std::optional<double> waiting;               ///< vllm:num_requests_waiting
  std::optional<double> kv_usage;              ///< vllm:kv_cache_usage_perc, 0..1
  std::optional<std::int64_t> num_gpu_blocks;  ///< vllm:cache_config_info
  std::optional<std::int64_t> block_size;      ///< vllm:cache_config_info
  std::optional<double> prefix_queries_total;  ///< vllm:prefix_cache_queries_total (prompt tokens looked up)
  std::optional<double> prefix_hits_total;     ///< vllm:prefix_cache_hits_total (of those, found cached)
  std::optional<double> preemptions_total;     ///< vllm:num_preemptions_total
};

/// Prompt tokens the engine computed since it started: queries minus hits; nullopt unless both are
/// reported and make sense.
[[nodiscard]] std::optional<std::uint64_t> computed_tokens(const ReplicaReport& report);

/// Keeps `metrics` current from `report` taken at `now`: running, waiting and KV usage (hostile values
/// clamped), KV capacity = blocks x block size (kept from an earlier report when this one has none),
/// computed tokens, and the prefill rate measured by `rate` from the same counters.
void observe_report(ReplicaMetrics& metrics, PrefillRate& rate, const ReplicaReport& report, Time now);

}  // namespace warden::core
