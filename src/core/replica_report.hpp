#pragma once
// The one function that keeps the routing view of a replica (ReplicaFigures) current from what its engine
// reported at one scrape (ReplicaReport, both in replica_figures.hpp). `serve` maps vLLM's Prometheus text
// to a ReplicaReport (gateway/runtime/model_runtime), `simulate` the engine model's counters (whatif/driver),
// so both feed the Router the same way. Pure.

#include <cstdint>
#include <optional>

#include "core/prefill_rate.hpp"
#include "core/replica_figures.hpp"
#include "core/types.hpp"

namespace warden::core {

/// Prompt tokens the engine computed since it started: queries minus hits; nullopt unless both are
/// reported and make sense.
[[nodiscard]] std::optional<std::uint64_t> computed_tokens(const ReplicaReport& report);

/// Host (CPU) offload capacity in tokens a report says, nullopt when it says nothing of the cache (no
/// block size): num_cpu_blocks x block_size when the engine reports its host blocks; else
/// kv_offloading_size GiB at the GPU pool's bytes per token (kv_cache_memory_bytes over num_gpu_blocks x
/// block_size) when it reports those; else 0 (no offload, or offload of a size in tokens not reported).
[[nodiscard]] std::optional<std::uint64_t> offload_capacity_tokens(const ReplicaReport& report);

/// Keeps `figures` current from `report` taken at `now`: running, waiting and KV usage (hostile values
/// clamped), KV capacity = blocks x block size and the host offload capacity (both kept from an earlier
/// report when this one has none), computed tokens, and the prefill rate measured by `rate` from the same
/// counters.
void observe_report(ReplicaFigures& figures, PrefillRate& rate, const ReplicaReport& report, Time now);

}  // namespace warden::core
