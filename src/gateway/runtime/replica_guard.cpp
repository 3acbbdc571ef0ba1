// Outlier ejection in the gateway (replica_guard.hpp): an ejection is logged, counted and recalls the
// requests still waiting on the replica, so they go elsewhere at once.
#include "gateway/runtime/replica_guard.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "gateway/runtime/model_runtime.hpp"

namespace warden::gateway {

namespace {

core::Time steady_now() {
  return std::chrono::steady_clock::now().time_since_epoch();
}

}  // namespace

void ReplicaGuard::replicas_down(const ModelRuntime& m, const std::vector<int>& replicas,
                                 std::string_view why) {
  if (const std::size_t n = waiting_.recall(m, replicas); n > 0) {
    spdlog::warn("model {}: {} request{} waiting on a replica marked unhealthy or ejected ({}) go elsewhere",
                 m.config().name, n, n == 1 ? "" : "s", why);
  }
}

void ReplicaGuard::outcome(ModelRuntime& m, int replica, std::optional<core::OutlierReason> failure) {
  const core::Time now = steady_now();
  if (!failure) {
    if (m.replica_set().outliers().request_succeeded(replica, now)) {
      spdlog::info("model {} replica {} re-admitted: its probe request succeeded", m.config().name, replica);
    }
    return;
  }
  if (m.replica_set().outliers().request_failed(replica, *failure, now)) {
    ejected(m, replica, now);
  }
}

void ReplicaGuard::judge_progress(ModelRuntime& m) {
  const core::Time now = steady_now();
  for (int replica : m.replica_set().outliers().eject_stalled(now)) {
    ejected(m, replica, now);
  }
}

void ReplicaGuard::ejected(ModelRuntime& m, int replica, core::Time now) {
  const core::OutlierState& o = m.replica_set().outliers().state(replica);
  const std::string_view reason = core::outlier_reason_name(o.reason());
  const auto backoff = std::chrono::duration_cast<std::chrono::milliseconds>(o.until() - now);
  spdlog::warn(
      "model {} replica {} ejected for {} ms ({}, ejection {} in a row): no new request goes there "
      "until one probe succeeds",
      m.config().name, replica, backoff.count(), reason, o.ejections());
  metrics_.replica_ejected(m.config().name, replica, reason);
  replicas_down(m, {replica}, fmt::format("ejected: {}", reason));
  if (o.reason() == core::OutlierReason::no_progress) {
    // Its streams make no progress either: each ends with an error event the client can retry on.
    if (const std::size_t n = relaying_.recall(m, {replica}); n > 0) {
      spdlog::warn("model {} replica {}: {} stream{} relaying from it cut with an error event",
                   m.config().name, replica, n, n == 1 ? "" : "s");
    }
  }
}

}  // namespace warden::gateway
