#include "whatif/fleet.hpp"

#include "whatif/sim_types.hpp"

namespace warden::whatif {

void Fleet::make() {
  engine::EngineConfig engine = engine_config(config_);
  engine.kv_events = config_.kv_events;
  engines_.clear();
  engine_config_ = engine;
  generation_.assign(config_.replicas, 0);
  pending_.assign(config_.replicas, false);
  steps_under_way_.assign(config_.replicas, {});
  next_request_id_ = 1;
  for (std::uint32_t r = 0; r < config_.replicas; ++r) {
    // One seed for every rank: a prompt gets the same reply wherever it runs, so both policies of a
    // comparison replay the same conversations.
    engines_.emplace_back(engine, config_.seed);
  }
}

std::optional<double> Fleet::start_step(std::uint32_t replica, double now) {
  engine::Engine& e = engines_[replica];
  if (!e.has_work()) {
    return std::nullopt;
  }
  engine::StepResult r = e.step(now);
  ++steps_;
  if (r.duration <= 0) {
    return std::nullopt;
  }
  pending_[replica] = true;
  steps_under_way_[replica] = Step{std::move(r.events), std::move(r.kv_events)};
  return r.duration;
}

std::optional<std::uint32_t> Fleet::current(std::uint64_t key) const {
  const auto replica = static_cast<std::uint32_t>(key & 0xffffffffU);
  if (key >> 32U != generation_[replica]) {
    return std::nullopt;
  }
  return replica;
}

Fleet::Step Fleet::end_step(std::uint32_t replica) {
  pending_[replica] = false;
  return std::move(steps_under_way_[replica]);
}

std::vector<engine::RequestId> Fleet::restart(std::uint32_t replica) {
  const engine::Engine& old = engines_[replica];
  std::vector<engine::RequestId> lost = old.running_ids();
  const std::vector<engine::RequestId> waiting = old.waiting_ids();
  lost.insert(lost.end(), waiting.begin(), waiting.end());
  engines_[replica] = engine::Engine(engine_config_, config_.seed);
  ++generation_[replica];
  pending_[replica] = false;
  steps_under_way_[replica] = {};
  return lost;
}

std::vector<core::RankLoad> Fleet::live_loads() const {
  std::vector<core::RankLoad> out;
  for (const auto& e : engines_) {
    const engine::Metrics m = e.metrics();
    out.push_back(core::RankLoad{m.num_waiting, m.num_running, m.kv_cache_usage});
  }
  return out;
}

report::PrefixCounters Fleet::prefix() const {
  report::PrefixCounters c;
  for (const auto& e : engines_) {
    const engine::Metrics m = e.metrics();
    // Tokens loaded from the offload tier are served from cache too (vLLM's cached_tokens counts them).
    c.hits += static_cast<double>(m.all_prefix_hits());
    c.queries += static_cast<double>(m.prefix_cache_queries_total);
  }
  return c;
}

std::uint64_t Fleet::preemptions() const {
  std::uint64_t n = 0;
  for (const auto& e : engines_) {
    n += e.metrics().num_preemptions_total;
  }
  return n;
}

int Fleet::busy() const {
  int busy = 0;
  for (const auto& e : engines_) {
    busy += e.metrics().num_running > 0 ? 1 : 0;
  }
  return busy;
}

}  // namespace warden::whatif
