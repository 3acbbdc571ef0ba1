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

bool OutlierState::failure(const OutlierConfig& config, OutlierReason why, Time now) {
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
  failures_ += 1;
  if (failures_ < config.consecutive_failures) {
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

void ProgressWatch::observe(std::optional<double> running, std::optional<double> tokens_total, Time now) {
  const bool busy = running && std::isfinite(*running) && *running > 0;
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

bool ProgressWatch::stalled(Time stall_after, Time now) const {
  return since_ && now - *since_ >= stall_after;
}

}  // namespace warden::core
