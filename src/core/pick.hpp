#pragma once
// Internal helper of the core: choose among replicas by minimal score with RNG tie-breaking.

#include <cmath>
#include <optional>

#include "core/rng.hpp"
#include "core/types.hpp"

namespace warden::core::detail {

/// Scores closer than this are a tie (scores are sums of small ratios; exact equality is the common case).
inline constexpr double tie_epsilon = 1e-12;

/// The eligible replica with the lowest score; ties broken uniformly by `rng`, which is consulted only when
/// there is more than one candidate at the minimum. nullopt when nothing is eligible.
template <class Eligible, class Score>
std::optional<ReplicaIndex> pick_min(const Snapshot& snapshot, Eligible&& eligible, Score&& score, Rng& rng) {
  const auto count = static_cast<ReplicaIndex>(snapshot.replicas.size());
  double best = 0.0;
  std::uint64_t ties = 0;
  for (ReplicaIndex i = 0; i < count; ++i) {
    if (!eligible(i)) {
      continue;
    }
    const double value = static_cast<double>(score(snapshot.replicas[i]));
    if (ties == 0 || value < best - tie_epsilon) {
      best = value;
      ties = 1;
    } else if (std::abs(value - best) <= tie_epsilon) {
      ++ties;
    }
  }
  if (ties == 0) {
    return std::nullopt;
  }
  std::uint64_t wanted = ties > 1 ? rng.uniform(ties) : 0;
  for (ReplicaIndex i = 0; i < count; ++i) {
    if (eligible(i) && std::abs(static_cast<double>(score(snapshot.replicas[i])) - best) <= tie_epsilon) {
      if (wanted == 0) {
        return i;
      }
      --wanted;
    }
  }
  return std::nullopt;  // unreachable: the second pass sees the same candidates
}

}  // namespace warden::core::detail
