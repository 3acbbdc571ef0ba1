#include "core/rebalance.hpp"

#include "core/cost_spill.hpp"

#include "core/pick.hpp"

namespace warden::core {

std::uint32_t live_requests(const ReplicaState& replica) {
  return replica.in_flight + replica.peer_in_flight;
}

bool prefix_evicted(const ReplicaState& home, const RequestFacts& facts) {
  const std::uint64_t warm = home.warm_capacity_tokens();
  return warm > 0 && facts.home_computed_since && *facts.home_computed_since >= warm;
}

namespace {

bool overflows(const ReplicaState& home) {
  return home.warm_capacity_tokens() > 0 && home.held_tokens > home.warm_capacity_tokens();
}

// Priced (cost_spill on, both prefill rates measured): the move's whole prompt at the target must start
// sooner than its uncached part at home, by the margin. Its cache at home is not yet lost: on a large
// model the target's prefill of a long context costs more than the imbalance saves.
bool worth_the_prefill(const Snapshot& snapshot, const RequestFacts& facts, const ReplicaState& from,
                       const ReplicaState& to) {
  if (!snapshot.routing.cost_spill.enabled) {
    return true;
  }
  const auto at_home = predicted_ttft(from, uncached_at_home(facts));
  const auto there = predicted_ttft(to, facts.prompt_tokens);
  if (!at_home || !there) {
    return true;
  }
  const double margin = std::chrono::duration<double>(snapshot.routing.cost_spill.margin).count();
  return *there + margin < *at_home;
}

}  // namespace

std::optional<ReplicaIndex> rebalance_target(const Snapshot& snapshot, const RequestFacts& facts,
                                             ReplicaIndex home, Rng& rng) {
  const ReplicaState& from = snapshot.replicas[home];
  // Several wardens learn of each other's turns a second or two late, so the mark is often two turns old:
  // measured, their moves cost more than they bought, so a warden with peers keeps its conversations home.
  if (from.peer_wardens > 0) {
    return std::nullopt;
  }
  const bool evicted = prefix_evicted(from, facts);
  if (!evicted && !overflows(from)) {
    return std::nullopt;
  }
  const auto other = [&](ReplicaIndex i) { return i != home && snapshot.replicas[i].healthy; };
  const auto load = [](const ReplicaState& r) { return static_cast<double>(live_requests(r)); };
  const auto target = detail::pick_min(snapshot, other, load, rng);
  if (!target) {
    return std::nullopt;
  }
  const ReplicaState& to = snapshot.replicas[*target];
  if (evicted) {
    return live_requests(to) < live_requests(from) ? target : std::nullopt;
  }
  const bool busier = live_requests(to) + 2 <= live_requests(from);
  const bool holds_more = to.active_conversations + 2 <= from.active_conversations;
  return busier && holds_more && worth_the_prefill(snapshot, facts, from, to) ? target : std::nullopt;
}

}  // namespace warden::core
