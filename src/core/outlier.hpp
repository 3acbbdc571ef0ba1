#pragma once
// Outlier ejection of one replica (passive health checking, after Envoy's outlier detection): consecutive
// failures of the requests sent to it, or a stalled engine (ProgressWatch), take it out of routing for a
// backoff that grows with each ejection (base x ejections, capped); after the backoff ONE request (the
// probe) may go to it: its success re-admits the replica, its failure ejects it again for longer. Pure:
// the gateway passes each request's outcome and the time.

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/types.hpp"

namespace warden::core {

struct OutlierConfig {
  /// Failures in a row (no success between them) that eject a replica; 0: failures never eject.
  int consecutive_failures = 3;
  /// The first ejection's length; the n-th lasts n x base_ejection, at most max_ejection.
  Time base_ejection = std::chrono::seconds(10);
  Time max_ejection = std::chrono::seconds(300);
  /// Requests running with no token counted for this long: the engine is stalled (ProgressWatch); 0: off.
  Time stall_after = std::chrono::seconds(30);

  friend bool operator==(const OutlierConfig&, const OutlierConfig&) = default;
};

/// What went wrong with one request on a replica.
enum class OutlierReason : std::uint8_t {
  first_byte,     ///< no first byte within timeouts.first_byte
  stream_stall,   ///< a stream that stopped sending after its first event (timeouts.idle)
  gateway_error,  ///< refused or failed connect, reset, broken answer, a 5xx from the engine
  no_progress,    ///< requests running and no token counted for stall_after (the progress watchdog)
};
inline constexpr int kOutlierReasons = 4;

/// "first_byte", "stream_stall", "gateway_error", "no_progress" (logs, metrics, the admin API).
[[nodiscard]] std::string_view outlier_reason_name(OutlierReason r);

class OutlierState {
 public:
  /// A request on the replica failed at `now`. True if that ejected the replica (the n-th failure in a
  /// row, or the probe's failure).
  bool failure(const OutlierConfig& config, OutlierReason why, Time now);
  /// A request on the replica succeeded (its whole answer arrived) at `now`. True if that re-admitted the
  /// replica (it was the probe).
  bool success(Time now);
  /// The engine was judged stalled: ejected at once unless it is already out. True if it was ejected.
  bool stalled(const OutlierConfig& config, Time now);

  /// False while ejected, and after the backoff while the probe is out.
  [[nodiscard]] bool routable(Time now) const;
  /// Called when a request was routed to the replica: true if that request is the probe (the backoff is
  /// over and no probe is out), which keeps every other request off the replica until its outcome.
  bool take_probe(Time now);
  /// The probe ended with no verdict (the client left, the engine refused the request itself): another
  /// request may probe.
  void probe_dropped() { probing_ = false; }

  [[nodiscard]] bool ejected() const { return ejected_; }
  [[nodiscard]] bool probing() const { return probing_; }
  /// When the backoff ends (meaningful while ejected()).
  [[nodiscard]] Time until() const { return until_; }
  [[nodiscard]] OutlierReason reason() const { return reason_; }
  [[nodiscard]] int ejections() const { return ejections_; }
  [[nodiscard]] int consecutive_failures() const { return failures_; }

 private:
  void eject(const OutlierConfig& config, OutlierReason why, Time now);

  int failures_ = 0;
  int ejections_ = 0;  // in the current run of ejections; forgotten after max_ejection admitted
  bool ejected_ = false;
  bool probing_ = false;
  Time until_{};
  Time admitted_at_{};  // when it was last re-admitted
  OutlierReason reason_ = OutlierReason::gateway_error;
};

/// The progress watchdog of one replica: the engine reports requests running while its token counters
/// (prompt + generation tokens, totals since it started) have not moved for stall_after. Pure: fed each
/// scrape's figures and time.
class ProgressWatch {
 public:
  /// One scrape. `tokens_total`: prompt + generation tokens (nullopt: the engine reports neither).
  void observe(std::optional<double> running, std::optional<double> tokens_total, Time now);
  /// Requests running and no token counted since stall_after before `now`.
  [[nodiscard]] bool stalled(Time stall_after, Time now) const;

 private:
  std::optional<double> tokens_;  // the last total seen
  std::optional<Time> since_;     // since when requests run with the total unchanged
};

}  // namespace warden::core
