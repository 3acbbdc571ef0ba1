// What the warden knows of each replica in a what-if run: the engines' metrics as last scraped (every
// scrape_interval, read through the function `serve` uses) and, with SimulationConfig::kv_events, the
// engines' own KV cache events (whatif/kv_sense.hpp). The Routers read these, never the engines.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/prefill_rate.hpp"
#include "core/router.hpp"
#include "engine/kv_events.hpp"
#include "whatif/kv_sense.hpp"

namespace warden::whatif {

struct SimulationConfig;
struct Hooks;
class Fleet;

class Senses {
 public:
  Senses(const SimulationConfig& config, const Hooks& hooks) : config_(config), hooks_(hooks) {}
  Senses(const Senses&) = delete;  // the KV indexes point into the metrics
  Senses& operator=(const Senses&) = delete;

  // The fleet's engines are new: nothing known of them but a first scrape at `now`.
  void reset(const Fleet& fleet, double now);
  // The warden scrapes every engine's metrics at `now`.
  void scrape(const Fleet& fleet, double now);
  [[nodiscard]] double next_scrape() const { return next_scrape_; }
  [[nodiscard]] std::span<const core::ReplicaMetrics> metrics() const { return scraped_; }

  // The KV cache events of one engine step; a request of `thread` sent to a replica (KvSense::sent); a
  // replica restarted.
  void step(std::uint32_t replica, std::span<const engine::KvEvent> events, double now);
  void sent(std::uint32_t replica, std::uint64_t thread, bool anew);
  void restarted(std::uint32_t replica);

 private:
  const SimulationConfig& config_;
  const Hooks& hooks_;
  std::vector<core::ReplicaMetrics> scraped_;
  std::vector<core::PrefillRate> rates_;
  std::optional<KvSense> kv_;  // the engines' KV cache events, with SimulationConfig::kv_events
  double next_scrape_ = 0;
};

}  // namespace warden::whatif
