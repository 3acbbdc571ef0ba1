// Outlier ejection in the gateway: the outcome of each proxied request and the progress watchdog's
// judgement feed the replica's OutlierState (core/outlier.hpp); an ejection is logged, counted and
// recalls the requests still waiting on the replica, so they go elsewhere at once.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/gateway.hpp"

namespace warden::gateway {

void Gateway::request_outcome(ModelRuntime& m, int replica, std::optional<core::OutlierReason> failure) {
  const core::Time now = Clock::now().time_since_epoch();
  if (!failure) {
    if (m.request_succeeded(replica, now)) {
      spdlog::info("model {} replica {} re-admitted: its probe request succeeded", m.config().name, replica);
    }
    return;
  }
  if (m.request_failed(replica, *failure, now)) {
    replica_ejected(m, replica, now);
  }
}

void Gateway::replica_ejected(ModelRuntime& m, int replica, core::Time now) {
  const core::OutlierState& o = m.replicas()[static_cast<std::size_t>(replica)].outlier;
  const std::string_view reason = core::outlier_reason_name(o.reason());
  const auto backoff = std::chrono::duration_cast<std::chrono::milliseconds>(o.until() - now);
  spdlog::warn(
      "model {} replica {} ejected for {} ms ({}, ejection {} in a row): no new request goes there "
      "until one probe succeeds",
      m.config().name, replica, backoff.count(), reason, o.ejections());
  metrics_.replica_ejected(m.config().name, replica, reason);
  recall_waiting(m, {replica}, fmt::format("ejected: {}", reason));
  if (o.reason() == core::OutlierReason::no_progress) {
    // Its streams make no progress either: each ends with an error event the client can retry on.
    if (const std::size_t n = relaying_.recall(m, {replica}); n > 0) {
      spdlog::warn("model {} replica {}: {} stream{} relaying from it cut with an error event",
                   m.config().name, replica, n, n == 1 ? "" : "s");
    }
  }
}

void Gateway::judge_progress(ModelRuntime& m) {
  const core::Time now = Clock::now().time_since_epoch();
  for (int replica : m.eject_stalled(now)) {
    replica_ejected(m, replica, now);
  }
}

}  // namespace warden::gateway
