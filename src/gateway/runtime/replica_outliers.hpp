// Outlier ejection of one model's replicas (core/outlier.hpp) with the rules in force: a request's
// failure or success on a replica, the one probe an ejected replica gets after its backoff, the progress
// watchdog after a scrape, and the fleet bound (no more than max_ejected_percent out at once). Owns what
// ejection knows of each replica; time is a parameter. Owned by ReplicaSet, which relays it with the
// replica list and feeds it each scrape's progress.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/outlier.hpp"
#include "core/replica_remap.hpp"

namespace warden::gateway {

class ReplicaOutliers {
 public:
  explicit ReplicaOutliers(std::size_t replicas) : watches_(replicas) {}

  // The rules (at start and at every reload).
  void configure(const core::OutlierConfig& config) { config_ = config; }
  const core::OutlierConfig& config() const { return config_; }
  // `replica`'s ejection state (a fresh one for an index out of range).
  const core::OutlierState& state(int replica) const;
  // False while `replica` is ejected, while its probe is out, and while a replica ejected as stalled
  // still makes no progress.
  bool routable(int replica, core::Time now) const;
  // A request on `replica` failed (true: that ejected it) or succeeded (true: that re-admitted it).
  bool request_failed(int replica, core::OutlierReason why, core::Time now);
  bool request_succeeded(int replica, core::Time now);
  // A request was routed to `replica`: true if it is the probe of an ejected replica.
  bool take_probe(int replica, core::Time now);
  void probe_dropped(int replica);
  // The progress watchdog after a scrape: the replicas just ejected as stalled.
  std::vector<int> eject_stalled(core::Time now);

  // A scrape of `replica`: its running requests and token counters (core::ProgressWatch::observe), and the
  // prefill backlog and rate that say how long its counters may stand still.
  void observe_progress(int replica, std::optional<double> running, std::optional<double> tokens,
                        std::uint64_t backlog, double prefill_rate, core::Time now);
  // A new engine process on `replica`: what the old one failed is forgotten.
  void forget(int replica);
  // A reload relaid the replica list (ModelRuntime::relay, ReplicaSet::remap): each replica keeps its state,
  // a new one starts fresh.
  void remap(const core::ReplicaRemap& remap);

 private:
  // What ejection knows of one replica.
  struct Watch {
    core::OutlierState outlier;    // ejection after failed requests or a stall
    core::ProgressWatch progress;  // running requests against the engine's token counters
    core::Time stall_allowance{};  // how long the counters may stand still (its prefill backlog, at a scrape)
  };
  // Replicas ejected now (their probe out included): what the fleet bound counts.
  std::size_t ejected_count() const;
  Watch* watch(int index);

  std::vector<Watch> watches_;
  core::OutlierConfig config_;
};

}  // namespace warden::gateway
