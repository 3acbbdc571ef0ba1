#include "app/placement_overrides.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <limits>

#include "core/decide.hpp"

namespace warden::app {

namespace {

long slots(const core::ReplicaState& r) {
  return static_cast<long>(r.in_flight) + r.peer_in_flight + r.active_conversations +
         r.peer_active_conversations;
}

double memory(const core::ReplicaState& r, std::uint32_t max_num_seqs) {
  return core::placement_score(r, max_num_seqs) - static_cast<double>(slots(r)) / std::max(1U, max_num_seqs);
}

}  // namespace

void PlacementOverrides::observe(const whatif::DecisionTrace& trace) {
  const core::Snapshot& s = trace.snapshot;
  const auto chosen = trace.decision.replica;
  if (trace.decision.route != core::Route::new_conversation || !chosen || *chosen >= s.replicas.size()) {
    return;
  }
  Tally& t = tallies_[{trace.policy, trace.sessions}];
  ++t.placed;
  const std::uint32_t seqs = s.max_num_seqs();
  std::size_t best = s.replicas.size();
  double best_score = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < s.replicas.size(); ++i) {
    const double score = core::placement_score(s.replicas[i], seqs);
    if (s.replicas[i].healthy && score < best_score) {
      best = i;
      best_score = score;
    }
  }
  const core::ReplicaState& c = s.replicas[*chosen];
  const double over = core::placement_score(c, seqs) - best_score;
  if (best == s.replicas.size() || over <= 1e-9) {
    return;
  }
  const core::ReplicaState& b = s.replicas[best];
  ++t.overridden;
  ++t.more_slots[slots(c) - slots(b)];
  t.max_memory = std::max(t.max_memory, memory(c, seqs) - memory(b, seqs));
  t.max_score = std::max(t.max_score, over);
}

std::string PlacementOverrides::summary() const {
  std::string out;
  for (const auto& [key, t] : tallies_) {
    std::string slots_seen;
    for (const auto& [more, count] : t.more_slots) {
      slots_seen += fmt::format("{}{:+} x{}", slots_seen.empty() ? "" : ", ", more, count);
    }
    out += fmt::format(
        "{} {:>3} sessions: {} of {} new conversations/threads placed on a cached start over a less-loaded "
        "replica; requests+conversations more: {}; memory term up to {:+.3f}, score up to {:+.3f}\n",
        key.first, key.second, t.overridden, t.placed, slots_seen.empty() ? "-" : slots_seen, t.max_memory,
        t.max_score);
  }
  return out;
}

}  // namespace warden::app
