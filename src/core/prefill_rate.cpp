#include "core/prefill_rate.hpp"

#include <chrono>

namespace warden::core {

void PrefillRate::observe(Time now, std::uint64_t queried_tokens_total, std::uint64_t cached_tokens_total,
                          std::uint32_t waiting) {
  const std::uint64_t computed =
      queried_tokens_total > cached_tokens_total ? queried_tokens_total - cached_tokens_total : 0;
  const Sample sample{now, computed, waiting};
  // A counter that went back (engine restarted) or a clock that did not move starts afresh.
  if (last_ && now > last_->time && computed >= last_->computed && last_->waiting > 0 && waiting > 0) {
    const double seconds = std::chrono::duration<double>(now - last_->time).count();
    const double rate = static_cast<double>(computed - last_->computed) / seconds;
    if (rate > 0) {
      rate_ = rate_ > 0 ? rate_ + smoothing * (rate - rate_) : rate;
    }
  }
  last_ = sample;
}

}  // namespace warden::core
