#include "gateway/runtime/replica_outliers.hpp"

#include <algorithm>

namespace warden::gateway {

std::size_t ReplicaOutliers::ejected_count() const {
  return static_cast<std::size_t>(
      std::count_if(watches_.begin(), watches_.end(), [](const Watch& w) { return w.outlier.ejected(); }));
}

ReplicaOutliers::Watch* ReplicaOutliers::watch(int index) {
  return index >= 0 && index < static_cast<int>(watches_.size()) ? &watches_[static_cast<std::size_t>(index)]
                                                                 : nullptr;
}

const core::OutlierState& ReplicaOutliers::state(int replica) const {
  static const core::OutlierState none;
  return replica >= 0 && replica < static_cast<int>(watches_.size())
             ? watches_[static_cast<std::size_t>(replica)].outlier
             : none;
}

bool ReplicaOutliers::routable(int replica, core::Time now) const {
  if (replica < 0 || replica >= static_cast<int>(watches_.size())) {
    return false;
  }
  const Watch& w = watches_[static_cast<std::size_t>(replica)];
  if (!w.outlier.ejected()) {
    return true;
  }
  // A stalled engine is probed once it makes progress again, not while it still holds requests frozen.
  const bool still_stalled = w.outlier.reason() == core::OutlierReason::no_progress &&
                             config_.stall_after > core::Time::zero() &&
                             w.progress.stalled(w.stall_allowance, now);
  return w.outlier.routable(now) && !still_stalled;
}

bool ReplicaOutliers::request_failed(int index, core::OutlierReason why, core::Time now) {
  Watch* w = watch(index);
  return w != nullptr &&
         w->outlier.failure(config_, why, now, core::may_eject(config_, ejected_count(), watches_.size()));
}

bool ReplicaOutliers::request_succeeded(int index, core::Time now) {
  Watch* w = watch(index);
  return w != nullptr && w->outlier.success(now);
}

bool ReplicaOutliers::take_probe(int index, core::Time now) {
  Watch* w = watch(index);
  return w != nullptr && routable(index, now) && w->outlier.take_probe(now);
}

void ReplicaOutliers::probe_dropped(int index) {
  if (Watch* w = watch(index)) {
    w->outlier.probe_dropped();
  }
}

std::vector<int> ReplicaOutliers::eject_stalled(core::Time now) {
  std::vector<int> out;
  if (config_.stall_after <= core::Time::zero()) {
    return out;
  }
  for (std::size_t i = 0; i < watches_.size(); ++i) {
    Watch& w = watches_[i];
    const bool room = w.outlier.ejected() || core::may_eject(config_, ejected_count(), watches_.size());
    if (w.progress.stalled(w.stall_allowance, now) && room && w.outlier.stalled(config_, now)) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

void ReplicaOutliers::observe_progress(int replica, std::optional<double> running,
                                       std::optional<double> tokens, std::uint64_t backlog,
                                       double prefill_rate, core::Time now) {
  if (Watch* w = watch(replica)) {
    w->progress.observe(running, tokens, backlog > 0, now);
    w->stall_allowance = core::stall_allowance(config_, backlog, prefill_rate);
  }
}

void ReplicaOutliers::forget(int replica) {
  if (Watch* w = watch(replica)) {
    w->outlier = core::OutlierState{};
    w->progress = core::ProgressWatch{};
  }
}

void ReplicaOutliers::remap(const core::ReplicaRemap& remap) {
  watches_ = core::remap_values(remap, std::move(watches_), Watch{});
}

}  // namespace warden::gateway
