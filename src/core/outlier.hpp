#pragma once
// Outlier ejection of one replica (passive health checking, after Envoy's outlier detection): consecutive
// failures of the requests sent to it, or a stalled engine (ProgressWatch), take it out of routing for a
// backoff that grows with each ejection (base x ejections, capped); after the backoff ONE request (the
// probe) may go to it: its success re-admits the replica, its failure ejects it again for longer. Pure:
// the gateway passes each request's outcome and the time.

#include <cstddef>
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
  /// A replica with prompts to prefill gets longer: stall_allowance().
  Time stall_after = std::chrono::seconds(30);
  /// At most this share of a model's replicas is ejected at once, and at least one may be (Envoy's
  /// max_ejection_percent): a replica over the bound keeps taking requests while its failures count.
  int max_ejection_percent = 50;
  /// Fewer replicas left to route to than this share of those answering their scrapes: the ejections are
  /// ignored and every answering replica takes requests again (Envoy's panic threshold); 0: never.
  int panic_percent = 50;

  friend bool operator==(const OutlierConfig&, const OutlierConfig&) = default;
};

/// Whether one more of `replicas` may be ejected with `ejected` of them out already (max_ejection_percent).
[[nodiscard]] bool may_eject(const OutlierConfig& config, std::size_t ejected, std::size_t replicas);
/// Whether the ejections are ignored: only `routable` of the `answering` replicas are left (panic_percent).
[[nodiscard]] bool panic(const OutlierConfig& config, std::size_t routable, std::size_t answering);

/// The prefill rate a replica is assumed to have until its own is measured (PrefillRate): slow for an
/// engine, so that an unmeasured replica's long prompt is given time rather than judged stalled.
inline constexpr double kAssumedPrefillTokensPerSecond = 500;
/// How much longer than its measured rate a prefill may take before the watchdog stops excusing it.
inline constexpr double kPrefillSlack = 3;
/// The most a prefill backlog adds to stall_after, in stall_afters: whatever prompts wait on a replica
/// (any client may pin many long ones to it), a wedged one is ejected within 3 x stall_after.
inline constexpr double kMaxPrefillStallAfters = 2;
/// How long a replica's token counters may stand still before it is judged stalled: stall_after, plus
/// the time its prefill backlog (`backlog_tokens`: the uncached prompt tokens of the requests routed to it
/// that have no first token yet) takes at `tokens_per_second` times kPrefillSlack, at most
/// kMaxPrefillStallAfters x stall_after. An engine prefilling a long prompt counts no token until the
/// prompt's first output token, and that is not a stall.
[[nodiscard]] Time stall_allowance(const OutlierConfig& config, std::uint64_t backlog_tokens,
                                   double tokens_per_second);

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
  /// row, or the probe's failure). Without `room` (the fleet bound, may_eject()) the failure is counted
  /// and the replica stays in; its next failure ejects it if there is room by then.
  bool failure(const OutlierConfig& config, OutlierReason why, Time now, bool room = true);
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

/// The progress watchdog of one replica: the engine has work (it reports requests running, or the warden
/// has requests there still waiting for their first token: an engine that hangs may report `running 0`)
/// while its token counters (prompt + generation tokens, totals since it started) have not moved for the
/// allowance (stall_allowance()). Pure: fed each scrape's figures and time.
class ProgressWatch {
 public:
  /// One scrape. `tokens_total`: prompt + generation tokens (nullopt: the engine reports neither).
  /// `awaited`: the warden has requests on the replica without their first token.
  void observe(std::optional<double> running, std::optional<double> tokens_total, bool awaited, Time now);
  /// Work there and no token counted since `allowance` before `now`.
  [[nodiscard]] bool stalled(Time allowance, Time now) const;

 private:
  std::optional<double> tokens_;  // the last total seen
  std::optional<Time> since_;     // since when requests run with the total unchanged
};

}  // namespace warden::core
