#pragma once
// A replica's prefill rate measured from its own counters, for cost-aware spill: prompt tokens computed
// (vllm:prefix_cache_queries_total minus vllm:prefix_cache_hits_total: the prompt tokens looked up at
// scheduling minus those found cached) per second over scrape intervals during which the replica had
// requests waiting at both ends, i.e. was prefilling as fast as it could alongside its decodes. Pure: the
// caller passes each scrape's values and time.

#include <cstdint>
#include <optional>

#include "core/types.hpp"

namespace warden::core {

class PrefillRate {
 public:
  /// Weight of a new interval in the running average.
  static constexpr double smoothing = 0.3;

  /// One scrape: the two counters (totals since the engine started), requests waiting, and the time.
  void observe(Time now, std::uint64_t queried_tokens_total, std::uint64_t cached_tokens_total,
               std::uint32_t waiting);

  /// Tokens per second; 0 until one saturated interval has been seen.
  [[nodiscard]] double tokens_per_second() const { return rate_; }

 private:
  struct Sample {
    Time time{};
    std::uint64_t computed = 0;
    std::uint32_t waiting = 0;
  };
  std::optional<Sample> last_;
  double rate_ = 0.0;
};

}  // namespace warden::core
