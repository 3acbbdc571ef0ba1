#include "core/rebalance.hpp"

#include "core/pick.hpp"

namespace warden::core {

std::uint32_t live_requests(const ReplicaState& replica) {
  return replica.in_flight + replica.peer_in_flight;
}

bool prefix_evicted(const ReplicaState& home, const RequestFacts& facts) {
  return home.kv_capacity_tokens > 0 && facts.home_computed_since &&
         *facts.home_computed_since >= home.kv_capacity_tokens;
}

namespace {

bool overflows(const ReplicaState& home) {
  return home.kv_capacity_tokens > 0 && home.held_tokens > home.kv_capacity_tokens;
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
  return busier && holds_more ? target : std::nullopt;
}

}  // namespace warden::core
