#include "core/replica_report.hpp"

#include <algorithm>
#include <cmath>

namespace warden::core {

namespace {

std::uint32_t gauge_count(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v) || *v < 0) {
    return 0;
  }
  return static_cast<std::uint32_t>(std::min(*v, 1e9));
}

}  // namespace

std::optional<std::uint64_t> computed_tokens(const ReplicaReport& report) {
  if (!report.prefix_queries_total || !report.prefix_hits_total) {
    return std::nullopt;
  }
  const double queries = *report.prefix_queries_total;
  const double hits = *report.prefix_hits_total;
  if (!std::isfinite(queries) || !std::isfinite(hits) || hits < 0 || queries < hits || queries > 1e18) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(queries - hits);
}

void observe_report(ReplicaFigures& figures, PrefillRate& rate, const ReplicaReport& report, Time now) {
  figures.running = gauge_count(report.running);
  figures.waiting = gauge_count(report.waiting);
  const double kv = report.kv_usage.value_or(0.0);
  figures.kv_usage = std::isfinite(kv) ? std::clamp(kv, 0.0, 1.0) : 0.0;
  const std::int64_t blocks = report.num_gpu_blocks.value_or(0);
  const std::int64_t block_size = report.block_size.value_or(0);
  if (blocks > 0 && block_size > 0 && blocks < (std::int64_t{1} << 40) && block_size < (1 << 20)) {
    figures.kv_capacity_tokens = static_cast<std::uint64_t>(blocks * block_size);
  }
  figures.set_computed(computed_tokens(report));
  if (figures.computed_known) {
    rate.observe(now, static_cast<std::uint64_t>(*report.prefix_queries_total),
                 static_cast<std::uint64_t>(*report.prefix_hits_total), figures.waiting);
    figures.prefill_tokens_per_second = rate.tokens_per_second();
  }
}

}  // namespace warden::core
