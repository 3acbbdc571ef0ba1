#include "whatif/senses.hpp"

#include "core/replica_report.hpp"
#include "whatif/fleet.hpp"
#include "whatif/flight.hpp"
#include "whatif/sim_types.hpp"

namespace warden::whatif {

namespace {

// The engine model's counters as a replica's report (what its vLLM /metrics would say).
core::ReplicaReport engine_report(const engine::Metrics& m) {
  return {static_cast<double>(m.num_running),
          static_cast<double>(m.num_waiting),
          m.kv_cache_usage,
          std::int64_t{m.num_gpu_blocks},
          std::int64_t{m.block_size},
          static_cast<double>(m.prefix_cache_queries_total),
          static_cast<double>(m.all_prefix_hits()),
          static_cast<double>(m.num_preemptions_total),
          std::nullopt,
          std::int64_t{m.num_cpu_blocks},
          std::nullopt};
}

}  // namespace

void Senses::reset(const Fleet& fleet, double now) {
  scraped_.assign(config_.replicas, core::ReplicaMetrics{});
  kv_.reset();
  if (config_.kv_events) {
    kv_.emplace(config_.replicas);
    kv_->attach(scraped_);
  }
  rates_.assign(config_.replicas, core::PrefillRate{});
  scrape(fleet, now);
}

void Senses::scrape(const Fleet& fleet, double now) {
  for (std::uint32_t r = 0; r < fleet.size(); ++r) {
    const engine::Metrics m = fleet.engine(r).metrics();
    core::ReplicaMetrics& s = scraped_[r];
    s.healthy = true;
    // What `serve` reads from the replica's /metrics, through the same function.
    core::observe_report(s, rates_[r], engine_report(m), to_time(now));
    ++s.scrape_generation;
  }
  if (hooks_.on_scrape) {
    hooks_.on_scrape(now, scraped_);
  }
  next_scrape_ = now + config_.scrape_interval;
}

void Senses::step(std::uint32_t replica, std::span<const engine::KvEvent> events, double now) {
  if (kv_) {
    kv_->step(replica, events, now);
  }
}

void Senses::sent(std::uint32_t replica, std::uint64_t thread, bool anew) {
  if (kv_) {
    kv_->sent(replica, thread, anew);
  }
}

void Senses::restarted(std::uint32_t replica) {
  if (kv_) {
    kv_->restarted(replica);
  }
}

}  // namespace warden::whatif
