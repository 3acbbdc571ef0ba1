// A model's replicas before and after a reload changed their list: where each old replica is now. A
// replica's identity is what serves it (its URL; a data-parallel rank's URL and rank), so a replica that
// stays keeps its conversations, counters and health wherever the new list puts it, and one that is gone
// maps to nothing. Pure: unit-tested directly (tests/core/replica_remap_test.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace warden::core {

struct ReplicaRemap {
  /// One entry per old replica: its index in the new list, nullopt if it is gone.
  std::vector<std::optional<ReplicaIndex>> to;
  std::size_t new_count = 0;

  /// Every old replica where it was, and none added.
  [[nodiscard]] bool identity() const;
  /// The old replicas that are gone.
  [[nodiscard]] std::vector<int> removed() const;
  /// The new replicas no old one maps to.
  [[nodiscard]] std::vector<int> added() const;
};

/// Matches the two lists by identity. A name listed twice matches in order (the first old one with the
/// first new one).
[[nodiscard]] ReplicaRemap remap_by_identity(std::span<const std::string> before,
                                             std::span<const std::string> after);

/// The conversation home a removed replica's conversations get: never a replica (the Router routes them
/// as a failover), never aggregated (SessionTable::max_tracked_replicas).
inline constexpr ReplicaIndex gone_replica = 65536;

/// Where `values` (one per old replica) go in the new list: entries of removed replicas are dropped, new
/// replicas get `fresh`.
template <typename T>
std::vector<T> remap_values(const ReplicaRemap& remap, std::vector<T> values, const T& fresh) {
  std::vector<T> out(remap.new_count, fresh);
  for (std::size_t i = 0; i < remap.to.size() && i < values.size(); ++i) {
    if (remap.to[i]) {
      out[*remap.to[i]] = std::move(values[i]);
    }
  }
  return out;
}

}  // namespace warden::core
