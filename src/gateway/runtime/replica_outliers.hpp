// Outlier ejection of one model's replicas (core/outlier.hpp) with the rules in force: a request's
// failure or success on a replica, the one probe an ejected replica gets after its backoff, the progress
// watchdog after a scrape, and the fleet bound (no more than max_ejected_percent out at once). Reads and
// changes the outlier state each ReplicaRuntime carries; time is a parameter. Owned by ModelRuntime.
#pragma once

#include <cstddef>
#include <vector>

#include "core/outlier.hpp"

namespace warden::gateway {

struct ReplicaRuntime;

class ReplicaOutliers {
 public:
  // `replicas` is the model's list (ModelRuntime's, which outlives this).
  explicit ReplicaOutliers(std::vector<ReplicaRuntime>& replicas) : replicas_(replicas) {}

  // The rules (at start and at every reload).
  void configure(const core::OutlierConfig& config) { config_ = config; }
  const core::OutlierConfig& config() const { return config_; }
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

 private:
  // Replicas ejected now (their probe out included): what the fleet bound counts.
  std::size_t ejected_count() const;
  ReplicaRuntime* replica(int index);

  std::vector<ReplicaRuntime>& replicas_;
  core::OutlierConfig config_;
};

}  // namespace warden::gateway
