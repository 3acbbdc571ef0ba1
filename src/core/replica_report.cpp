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

// A count of cache blocks or bytes from a label, if it is a sane one (bounded: a hostile scrape cannot
// overflow the products below).
std::optional<std::int64_t> sane_count(const std::optional<std::int64_t>& v, std::int64_t bound) {
  if (!v || *v <= 0 || *v >= bound) {
    return std::nullopt;
  }
  return v;
}

constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 40;
constexpr std::int64_t kMaxBlockSize = 1 << 20;

}  // namespace

std::optional<std::uint64_t> offload_capacity_tokens(const ReplicaReport& report) {
  const auto block_size = sane_count(report.block_size, kMaxBlockSize);
  if (!block_size) {
    return std::nullopt;
  }
  if (const auto cpu_blocks = sane_count(report.num_cpu_blocks, kMaxBlocks)) {
    return static_cast<std::uint64_t>(*cpu_blocks * *block_size);
  }
  const double gib = report.kv_offloading_gib.value_or(0.0);
  const auto gpu_blocks = sane_count(report.num_gpu_blocks, kMaxBlocks);
  const auto gpu_bytes = sane_count(report.kv_cache_memory_bytes, std::int64_t{1} << 50);
  if (!std::isfinite(gib) || gib <= 0 || gib > 1e6 || !gpu_blocks || !gpu_bytes) {
    return 0;
  }
  const double tokens_per_byte =
      static_cast<double>(*gpu_blocks * *block_size) / static_cast<double>(*gpu_bytes);
  return static_cast<std::uint64_t>(std::min(gib * 1073741824.0 * tokens_per_byte, 1e15));
}

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
  if (blocks > 0 && block_size > 0 && blocks < kMaxBlocks && block_size < kMaxBlockSize) {
    figures.kv_capacity_tokens = static_cast<std::uint64_t>(blocks * block_size);
    figures.block_size = static_cast<std::uint32_t>(block_size);
  }
  if (const auto offload = offload_capacity_tokens(report)) {
    figures.offload_capacity_tokens = *offload;
  }
  figures.set_computed(computed_tokens(report));
  if (figures.computed_known) {
    rate.observe(now, static_cast<std::uint64_t>(*report.prefix_queries_total),
                 static_cast<std::uint64_t>(*report.prefix_hits_total), figures.waiting);
    figures.prefill_tokens_per_second = rate.tokens_per_second();
  }
}

}  // namespace warden::core
