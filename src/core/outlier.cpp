#include "core/outlier.hpp"

#include <algorithm>
#include <cmath>

namespace warden::core {

std::string_view outlier_reason_name(OutlierReason r) {
  switch (r) {
    case OutlierReason::first_byte:
      return "first_byte";
    case OutlierReason::stream_stall:
      return "stream_stall";
    case OutlierReason::gateway_error:
      return "gateway_error";
    case OutlierReason::no_progress:
      return "no_progress";
  }
  return "gateway_error";
}

bool may_eject(const OutlierConfig& config, std::size_t ejected, std::size_t replicas) {
  const auto percent = static_cast<std::size_t>(std::clamp(config.max_ejection_percent, 0, 100));
  return ejected < std::max<std::size_t>(1, replicas * percent / 100);
}

bool panic(const OutlierConfig& config, std::size_t routable, std::size_t answering) {
  const auto percent = static_cast<std::size_t>(std::clamp(config.panic_percent, 0, 100));
  return answering > 0 && routable * 100 < answering * percent;
}

Time stall_allowance(const OutlierConfig& config, std::uint64_t backlog_tokens, double tokens_per_second) {
  const double rate = std::isfinite(tokens_per_second) && tokens_per_second > 0
                          ? tokens_per_second
                          : kAssumedPrefillTokensPerSecond;
  const double most = kMaxPrefillStallAfters * std::chrono::duration<double>(config.stall_after).count();
  const double seconds = std::min(kPrefillSlack * static_cast<double>(backlog_tokens) / rate, most);
  return config.stall_after + std::chrono::duration_cast<Time>(std::chrono::duration<double>(seconds));
}

void OutlierState::eject(const OutlierConfig& config, OutlierReason why, Time now) {
  // A replica that stayed in for the longest backoff has earned a fresh start: its next ejection is short.
  if (!ejected_ && ejections_ > 0 && now - admitted_at_ >= config.max_ejection) {
    ejections_ = 0;
  }
  ejections_ += 1;
  ejected_ = true;
  probing_ = false;
  failures_ = 0;
  reason_ = why;
  until_ = now + std::min(config.max_ejection, config.base_ejection * ejections_);
}

bool OutlierState::failure(const OutlierConfig& config, OutlierReason why, Time now, bool room) {
  if (ejected_) {
    if (!probing_) {
      return false;  // a request sent before the ejection: it adds nothing
    }
    eject(config, why, now);  // the probe failed: out again, for longer
    return true;
  }
  if (config.consecutive_failures <= 0) {
    return false;  // ejection on failures turned off
  }
  failures_ = std::min(failures_ + 1, config.consecutive_failures);
  if (failures_ < config.consecutive_failures || !room) {
    return false;
  }
  eject(config, why, now);
  return true;
}

bool OutlierState::success(Time now) {
  if (ejected_ && !probing_) {
    return false;  // a request sent before the ejection: the replica is re-admitted only by its probe
  }
  failures_ = 0;
  if (!ejected_) {
    return false;
  }
  ejected_ = false;
  probing_ = false;
  admitted_at_ = now;
  return true;
}

bool OutlierState::stalled(const OutlierConfig& config, Time now) {
  if (ejected_ && !probing_) {
    return false;
  }
  eject(config, OutlierReason::no_progress, now);
  return true;
}

bool OutlierState::routable(Time now) const {
  return !ejected_ || (now >= until_ && !probing_);
}

bool OutlierState::take_probe(Time now) {
  if (!ejected_ || probing_ || now < until_) {
    return false;
  }
  probing_ = true;
  return true;
}

void ProgressWatch::observe(std::optional<double> running, std::optional<double> tokens_total, bool awaited,
                            Time now) {
  const bool busy = awaited || (running && std::isfinite(*running) && *running > 0);
  const bool moved = tokens_total && (!tokens_ || *tokens_total != *tokens_);
  if (tokens_total) {
    tokens_ = *tokens_total;
  }
  if (!busy || !tokens_total || moved) {
    since_ = busy && tokens_total ? std::optional<Time>(now) : std::nullopt;
    return;
  }
  if (!since_) {
    since_ = now;
  }
}

bool ProgressWatch::stalled(Time allowance, Time now) const {
  return since_ && now - *since_ >= allowance;
}

}  // namespace warden::core
