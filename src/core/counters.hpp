#pragma once
// Routing counters per replica since the warden started (the "Data parallel routing" card).

#include <cstdint>
#include <optional>
#include <vector>

#include "core/replica_remap.hpp"
#include "core/types.hpp"

namespace warden::core {

struct ReplicaCounters {
  /// Live: routed and not yet finished.
  std::uint32_t in_flight = 0;
  /// Cumulative since start, one per routed request, by route.
  std::uint64_t new_conversations = 0;
  std::uint64_t sticky = 0;
  std::uint64_t spilled_in = 0;  ///< requests spilled *to* this replica
  std::uint64_t client_pinned = 0;
  std::uint64_t balanced = 0;
  std::uint64_t failover = 0;    ///< conversations re-homed *to* this replica (their home was unhealthy)
  std::uint64_t rehomed_in = 0;  ///< conversations moved *to* this replica (their home was overloaded)

  [[nodiscard]] std::uint64_t routed() const {
    return new_conversations + sticky + spilled_in + client_pinned + balanced + failover + rehomed_in;
  }
};

/// Counters of one model, kept by its Router.
class ModelCounters {
 public:
  /// Grows (never shrinks: history is kept if replicas are removed) to `count` replicas.
  void ensure(std::size_t count);
  /// Counts a routed request and increments its in_flight (a decision without replica counts as unrouted,
  /// a queued one as queued).
  void record(const Decision& decision);
  /// Decrements in_flight (never below zero).
  void finish(ReplicaIndex replica);
  /// Takes back the route count of a decision whose request never reached its replica and is routed
  /// again (the gateway's failover retry), so that every request is counted once, by its final route.
  void retract(const Decision& decision);
  /// The replicas a reload relaid (core/replica_remap.hpp): each one's counters follow it, a removed
  /// one's leave the per-replica list but stay in totals() (counters do not go back), and its in_flight is
  /// forgotten (those requests finish against no replica here).
  void remap(const ReplicaRemap& remap);

  [[nodiscard]] const std::vector<ReplicaCounters>& replicas() const { return replicas_; }
  [[nodiscard]] ReplicaCounters totals() const;
  /// sticky / (sticky + spilled) over all replicas, in percent; nullopt before any sticky or spilled request.
  [[nodiscard]] std::optional<double> sticky_percent() const;
  /// Requests that found no replica (any reason).
  [[nodiscard]] std::uint64_t unrouted() const { return unrouted_; }
  void record_unrouted() { ++unrouted_; }
  /// Routing attempts that were held back by admission (a request held and retried counts each time).
  [[nodiscard]] std::uint64_t queued() const { return queued_; }

 private:
  std::vector<ReplicaCounters> replicas_;
  ReplicaCounters removed_;  // what replicas removed by a reload had counted (in_flight unused)
  std::uint64_t unrouted_ = 0;
  std::uint64_t queued_ = 0;
};

}  // namespace warden::core
