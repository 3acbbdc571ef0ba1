#include "gateway/runtime/replica_outliers.hpp"

#include <algorithm>

#include "gateway/runtime/model_runtime.hpp"

namespace warden::gateway {

std::size_t ReplicaOutliers::ejected_count() const {
  return static_cast<std::size_t>(
      std::count_if(replicas_.begin(), replicas_.end(), [](const auto& r) { return r.outlier.ejected(); }));
}

ReplicaRuntime* ReplicaOutliers::replica(int index) {
  return index >= 0 && index < static_cast<int>(replicas_.size())
             ? &replicas_[static_cast<std::size_t>(index)]
             : nullptr;
}

bool ReplicaOutliers::routable(int replica, core::Time now) const {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) {
    return false;
  }
  const ReplicaRuntime& r = replicas_[static_cast<std::size_t>(replica)];
  if (!r.outlier.ejected()) {
    return true;
  }
  // A stalled engine is probed once it makes progress again, not while it still holds requests frozen.
  const bool still_stalled = r.outlier.reason() == core::OutlierReason::no_progress &&
                             config_.stall_after > core::Time::zero() &&
                             r.progress.stalled(r.stall_allowance, now);
  return r.outlier.routable(now) && !still_stalled;
}

bool ReplicaOutliers::request_failed(int index, core::OutlierReason why, core::Time now) {
  ReplicaRuntime* r = replica(index);
  return r != nullptr &&
         r->outlier.failure(config_, why, now, core::may_eject(config_, ejected_count(), replicas_.size()));
}

bool ReplicaOutliers::request_succeeded(int index, core::Time now) {
  ReplicaRuntime* r = replica(index);
  return r != nullptr && r->outlier.success(now);
}

bool ReplicaOutliers::take_probe(int index, core::Time now) {
  ReplicaRuntime* r = replica(index);
  return r != nullptr && routable(index, now) && r->outlier.take_probe(now);
}

void ReplicaOutliers::probe_dropped(int index) {
  if (ReplicaRuntime* r = replica(index)) {
    r->outlier.probe_dropped();
  }
}

std::vector<int> ReplicaOutliers::eject_stalled(core::Time now) {
  std::vector<int> out;
  if (config_.stall_after <= core::Time::zero()) {
    return out;
  }
  for (std::size_t i = 0; i < replicas_.size(); ++i) {
    ReplicaRuntime& r = replicas_[i];
    const bool room = r.outlier.ejected() || core::may_eject(config_, ejected_count(), replicas_.size());
    if (r.progress.stalled(r.stall_allowance, now) && room && r.outlier.stalled(config_, now)) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

}  // namespace warden::gateway
