#include "core/cost_spill.hpp"

#include <algorithm>
#include <chrono>

#include "core/admission.hpp"
#include "core/pick.hpp"

namespace warden::core {

std::optional<double> predicted_ttft(const ReplicaState& replica, std::uint64_t tokens) {
  if (!(replica.prefill_tokens_per_second > 0)) {
    return std::nullopt;
  }
  return static_cast<double>(replica.prefill_backlog_tokens + tokens) / replica.prefill_tokens_per_second;
}

std::uint32_t uncached_at_home(const RequestFacts& facts) {
  return facts.prompt_tokens - std::min(facts.prompt_tokens, facts.home_cached_tokens);
}

std::optional<ReplicaIndex> cost_spill_target(const Snapshot& snapshot, const RequestFacts& facts,
                                              ReplicaIndex home, Rng& rng) {
  const auto at_home = predicted_ttft(snapshot.replicas[home], uncached_at_home(facts));
  if (!at_home) {
    return std::nullopt;
  }
  const double high = snapshot.routing.admission.high_water;
  const auto eligible = [&](ReplicaIndex i) {
    const ReplicaState& r = snapshot.replicas[i];
    return i != home && r.healthy && predicted_ttft(r, 0) &&
           (!snapshot.routing.admission.enabled || has_room(r, facts.prompt_tokens, high));
  };
  const auto ttft = [&](const ReplicaState& r) { return *predicted_ttft(r, facts.prompt_tokens); };
  const auto target = detail::pick_min(snapshot, eligible, ttft, rng);
  if (!target) {
    return std::nullopt;
  }
  // The price of the move: the target spends the whole prompt's prefill, which every request queued there
  // waits for too. The wait the move saves this turn must exceed it, and the margin.
  const ReplicaState& to = snapshot.replicas[*target];
  const double price = static_cast<double>(facts.prompt_tokens) / to.prefill_tokens_per_second;
  const double margin = std::chrono::duration<double>(snapshot.routing.cost_spill.margin).count();
  const double saved = *at_home - ttft(to);
  return saved > price + margin ? target : std::nullopt;
}

}  // namespace warden::core
