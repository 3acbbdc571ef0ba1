// The what-if run's replicas: one engine model per replica, each stepping in virtual time. The driver asks
// a replica to step and hands back the step's events when its duration has passed; an engine that restarts
// comes back empty under a new generation, so that a step of the old one is recognized and dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/vllm_balancer.hpp"
#include "engine/engine.hpp"
#include "report/row.hpp"

namespace warden::whatif {

struct SimulationConfig;

class Fleet {
 public:
  explicit Fleet(const SimulationConfig& config) : config_(config) {}

  // New engines with empty caches.
  void make();

  [[nodiscard]] std::size_t size() const { return engines_.size(); }
  [[nodiscard]] const engine::Engine& engine(std::uint32_t replica) const { return engines_[replica]; }
  engine::Result<void> add(std::uint32_t replica, engine::RequestSpec spec) {
    return engines_[replica].add_request(std::move(spec));
  }
  [[nodiscard]] bool stepping(std::uint32_t replica) const { return pending_[replica]; }

  // Starts a step of the replica's engine at `now`: its duration, none when nothing is schedulable (the
  // next arrival starts the engine again).
  std::optional<double> start_step(std::uint32_t replica, double now);
  // The key of the replica's step under way: its engine's generation and the replica.
  [[nodiscard]] std::uint64_t step_key(std::uint32_t replica) const {
    return std::uint64_t{generation_[replica]} << 32U | replica;
  }
  // The replica of a step's key, if its engine has not restarted since.
  [[nodiscard]] std::optional<std::uint32_t> current(std::uint64_t key) const;

  struct Step {
    std::vector<engine::Event> events;
    std::vector<engine::KvEvent> kv;
  };
  // The step under way on the replica ended: its events.
  Step end_step(std::uint32_t replica);

  // The replica's engine restarts empty: the requests it held, running and waiting.
  std::vector<engine::RequestId> restart(std::uint32_t replica);

  // What every engine says now: true loads, prefix counters, preemptions, engines running something.
  [[nodiscard]] std::vector<core::RankLoad> live_loads() const;
  [[nodiscard]] report::PrefixCounters prefix() const;
  [[nodiscard]] std::uint64_t preemptions() const;
  [[nodiscard]] int busy() const;
  [[nodiscard]] std::uint64_t steps() const { return steps_; }
  // Request ids are the engines': unique while they run.
  std::uint64_t next_request_id() { return next_request_id_++; }

 private:
  const SimulationConfig& config_;
  engine::EngineConfig engine_config_;
  std::vector<engine::Engine> engines_;
  std::vector<bool> pending_;              // a step under way
  std::vector<std::uint32_t> generation_;  // per replica: engines restarted so far
  std::vector<Step> steps_under_way_;
  std::uint64_t steps_ = 0;
  std::uint64_t next_request_id_ = 1;
};

}  // namespace warden::whatif
