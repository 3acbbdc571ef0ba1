#pragma once
// A replica's engine figures, raw and validated: ReplicaReport is what one scrape said, ReplicaFigures
// what routing reads of it (kept by observe_report, replica_report.hpp). Both the poller's view
// (ReplicaMetrics) and the decision's (ReplicaState) are ReplicaFigures, so a new engine figure is
// declared here, once, and reaches the decision without a copy to write. Pure data.

#include <algorithm>
#include <cstdint>
#include <optional>

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
  /// Of those, not computed: vllm:prefix_cache_hits_total (found in the GPU cache) plus
  /// vllm:external_prefix_cache_hits_total (loaded through a KV connector, such as vLLM's CPU offload).
  std::optional<double> prefix_hits_total;
  std::optional<double> preemptions_total;  ///< vllm:num_preemptions_total
  /// Host (CPU) KV offload, from vllm:cache_config_info too: `kv_offloading_size` (GiB of host memory;
  /// "None" = off, read as 0), `num_cpu_blocks` (host blocks of block_size tokens: vLLM V1 says 0, an
  /// engine that sizes its host pool in blocks says how many) and `kv_cache_memory_bytes` (the GPU pool in
  /// bytes, given only when vLLM was started with it), from which GiB become tokens.
  std::optional<double> kv_offloading_gib;
  std::optional<std::int64_t> num_cpu_blocks;
  std::optional<std::int64_t> kv_cache_memory_bytes;
};

/// What routing reads of a replica's reports, validated (observe_report).
struct ReplicaFigures {
  /// `vllm:num_requests_running` / `vllm:num_requests_waiting` at the last scrape.
  std::uint32_t running = 0;
  std::uint32_t waiting = 0;
  /// `vllm:kv_cache_usage_perc`, 0..1 (the Router clamps it again: ReplicaMetrics may be set without a
  /// report).
  double kv_usage = 0.0;
  /// KV-cache capacity in tokens (num_gpu_blocks * block_size from `vllm:cache_config_info`); 0 = unknown.
  std::uint64_t kv_capacity_tokens = 0;
  /// Tokens per KV cache block (`vllm:cache_config_info` block_size); 0 = unknown.
  std::uint32_t block_size = 0;
  /// Host (CPU) KV offload capacity in tokens (offload_capacity_tokens(), replica_report.hpp): prefixes the
  /// GPU cache evicted that the engine can load back instead of computing; 0 = no offload, or its size in
  /// tokens unknown.
  std::uint64_t offload_capacity_tokens = 0;
  /// Prefill tokens per second, measured from the replica's counters (PrefillRate); 0 = not measured yet.
  double prefill_tokens_per_second = 0.0;
  /// Prompt tokens the engine computed since it started (`vllm:prefix_cache_queries_total` minus
  /// `vllm:prefix_cache_hits_total`), when reported (`computed_known`; read both through computed()). A
  /// count and a flag rather than an optional: the flag sits where ReplicaState's first member goes in the
  /// padding after it, so the decision copies 104 bytes a replica, not 112.
  std::uint64_t computed_tokens = 0;
  bool computed_known = false;

  [[nodiscard]] std::optional<std::uint64_t> computed() const {
    return computed_known ? std::optional<std::uint64_t>(computed_tokens) : std::nullopt;
  }
  /// Tokens whose prefix stays warm on the rank, in its GPU cache or in host memory: the larger of the two
  /// (vLLM's offload stores every block the GPU computes, so each holds the most recently computed ones;
  /// 0 = unknown).
  [[nodiscard]] std::uint64_t warm_capacity_tokens() const {
    return std::max(kv_capacity_tokens, offload_capacity_tokens);
  }
  void set_computed(std::optional<std::uint64_t> tokens) {
    computed_known = tokens.has_value();
    computed_tokens = tokens.value_or(0);
  }
};

}  // namespace warden::core
