// A model's working set against what its host holds: the tokens of the conversations active on its
// replicas (core::ReplicaSessions: each one's last prompt) against their GPU KV caches and their host (CPU)
// offload (core::ReplicaFigures). The seed's rule of thumb, conversations x context within the host's
// cache, in figures: the admin API's `working_set` (docs/api.md), the console's card and the
// lm_warden_*working_set* / *capacity* metrics read them. Pure.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/router.hpp"

namespace warden::gateway {

class ModelRuntime;

/// One replica's share: its active conversations and their tokens, its GPU cache and host offload in
/// tokens (0 = unknown or none).
struct ReplicaWorkingSet {
  bool healthy = true;
  std::uint32_t conversations = 0;
  std::uint64_t held_tokens = 0;
  std::uint64_t gpu_tokens = 0;
  std::uint64_t host_tokens = 0;
};

/// The model's sums. Capacity counts the healthy replicas only (a replica that is down holds nothing a
/// conversation can use); conversations and tokens count wherever their home is.
struct WorkingSet {
  std::uint32_t conversations = 0;
  std::uint64_t held_tokens = 0;
  std::uint64_t gpu_tokens = 0;
  std::uint64_t host_tokens = 0;

  /// A conversation's typical context: held tokens per conversation (0 without one).
  [[nodiscard]] std::uint64_t typical_tokens() const {
    return conversations > 0 ? held_tokens / conversations : 0;
  }
  /// What the host holds: GPU caches plus host offload.
  [[nodiscard]] std::uint64_t capacity_tokens() const { return gpu_tokens + host_tokens; }
};

[[nodiscard]] WorkingSet add_up(std::span<const ReplicaWorkingSet> replicas);

/// Each replica of `model` as `view` (its Router's) and its scrapes see it: this warden's conversations,
/// plus those other wardens sharing state publish with `peers`.
[[nodiscard]] std::vector<ReplicaWorkingSet> replica_working_sets(const ModelRuntime& model,
                                                                  const core::RouterView& view, bool peers);

}  // namespace warden::gateway
