#include "gateway/runtime/replica_runtime.hpp"

#include <algorithm>
#include <cmath>

namespace warden::gateway {

void CounterDelta::observe(double value) {
  if (!std::isfinite(value) || value < 0) {
    return;  // a hostile or broken engine must not poison the rate
  }
  if (last_) {
    delta_ += value >= *last_ ? value - *last_ : value;
  }
  last_ = value;
}

std::optional<double> ReplicaRuntime::prefix_hit_rate() const {
  const double q = prefix_queries.delta();
  if (q <= 0) {
    return std::nullopt;
  }
  return std::clamp(prefix_hits.delta() / q, 0.0, 1.0);
}

}  // namespace warden::gateway
