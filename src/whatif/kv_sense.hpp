#pragma once
// The what-if driver's third sense: each engine's KV cache events, taken the way `serve` takes them. An
// engine step's events are put on the wire (engine::to_wire), encoded to msgpack and decoded again
// (protocol/kv_events.hpp), then applied to the replica's index (core::apply_events), which the Router reads
// through ReplicaMetrics::kv. Nothing is lost between engine and warden here (no gaps, no lag beyond the
// step): a run with events is the warden with a live sense on every replica.

#include <cstdint>
#include <span>
#include <vector>

#include "core/kv_index.hpp"
#include "core/router.hpp"
#include "engine/kv_events.hpp"

namespace warden::whatif {

struct KvSenseStats {
  std::uint64_t batches = 0;
  std::uint64_t bytes = 0;
  std::uint64_t stored_blocks = 0;
  std::uint64_t removed_blocks = 0;
  std::uint64_t decode_errors = 0;
};

class KvSense {
 public:
  /// `replicas` indexes, each complete from the start (the engines start empty).
  explicit KvSense(std::size_t replicas);

  /// One engine step's events on `replica`, at model time `ts`.
  void step(std::uint32_t replica, std::span<const engine::KvEvent> events, double ts);
  /// A request of `thread` was handed to `replica`'s engine (KvIndex::sent).
  void sent(std::uint32_t replica, std::uint64_t thread, bool anew);
  /// The engine of `replica` restarted: its publisher's seq is back to 0, its cache is empty.
  void restarted(std::uint32_t replica);
  /// Points each replica's metrics at its index.
  void attach(std::span<core::ReplicaMetrics> metrics) const;

  [[nodiscard]] const core::KvIndex& index(std::uint32_t replica) const { return indexes_[replica]; }
  [[nodiscard]] const KvSenseStats& stats() const { return stats_; }

 private:
  std::vector<core::KvIndex> indexes_;
  KvSenseStats stats_;
};

}  // namespace warden::whatif
