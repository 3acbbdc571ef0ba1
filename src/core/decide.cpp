#include "core/decide.hpp"

#include <algorithm>

#include "core/admission.hpp"
#include "core/cost_spill.hpp"
#include "core/pick.hpp"
#include "core/rebalance.hpp"
#include "core/task_admission.hpp"

namespace warden::core {

namespace {

Decision none(Route route, NoReplicaReason reason) {
  return Decision{std::nullopt, route, reason};
}

Decision place(const Snapshot& snapshot, Route route, Rng& rng) {
  const auto healthy = [&](ReplicaIndex i) { return snapshot.replicas[i].healthy; };
  const auto score = [&](const ReplicaState& r) { return placement_score(r, snapshot.max_num_seqs()); };
  if (auto chosen = detail::pick_min(snapshot, healthy, score, rng)) {
    return Decision{chosen, route, NoReplicaReason::none};
  }
  return none(route, NoReplicaReason::no_healthy_replica);
}

// Requests and conversations on a replica, this warden's and the other wardens'.
std::uint64_t slots_of(const ReplicaState& r) {
  return std::uint64_t{r.in_flight} + r.peer_in_flight + r.active_conversations + r.peer_active_conversations;
}

// The memory term of placement_score once the replica also holds `added` more tokens of working set.
double memory_with(const ReplicaState& r, std::uint64_t added) {
  double memory = std::clamp(r.kv_usage, 0.0, 1.0);
  if (r.kv_capacity_tokens > 0) {
    const double held = static_cast<double>(r.held_tokens + r.peer_held_tokens + added);
    memory = std::max(memory, held / static_cast<double>(r.kv_capacity_tokens));
  }
  return memory;
}

// Rule 7's comparable load: the replica `holder`, which holds part of the new thread's prompt, may take it
// instead of `best` if it carries at most cached_start_slots() more requests and conversations (none more
// for a start shorter than the digest: a few hundred tokens are not worth a conversation's load), its working
// set with the new thread (whose start it holds already, so counted once) is within cached_start_margin of
// the best's with the whole prompt added, and it is under the spill threshold.
bool comparable_load(const Snapshot& snapshot, const RequestFacts& facts, ReplicaIndex holder,
                     ReplicaIndex best) {
  const ReplicaState& h = snapshot.replicas[holder];
  const ReplicaState& b = snapshot.replicas[best];
  const std::uint64_t more = facts.thread.long_start ? cached_start_slots(snapshot.max_num_seqs()) : 0;
  return slots_of(h) <= slots_of(b) + more &&
         memory_with(h, 0) <=
             memory_with(b, facts.prompt_tokens) + cached_start_margin + detail::tie_epsilon &&
         h.in_flight < snapshot.spill_threshold();
}

// The best eligible replica by placement_score, or a preferred one (rule 7) of comparable load.
template <class Eligible>
std::optional<ReplicaIndex> place_among(const Snapshot& snapshot, const RequestFacts& facts,
                                        Eligible&& eligible, Rng& rng) {
  const ReplicaSet preferred = facts.preferred;
  const auto score = [&](const ReplicaState& r) { return placement_score(r, snapshot.max_num_seqs()); };
  const auto best = detail::pick_min(snapshot, eligible, score, rng);
  if (!best || preferred == 0 || (*best < replica_set_size && (preferred >> *best & 1) != 0)) {
    return best;
  }
  const auto holds_start = [&](ReplicaIndex i) {
    return i < replica_set_size && (preferred >> i & 1) != 0 && eligible(i) &&
           comparable_load(snapshot, facts, i, *best);
  };
  const auto cached = detail::pick_min(snapshot, holds_start, score, rng);
  return cached ? cached : best;
}

// Rule 7: a new conversation, admitted (or held) as a new agent task and by working set, then placed by
// placement_score among the replicas each admission leaves.
Decision place_new(const Snapshot& snapshot, const RequestFacts& facts, Rng& rng) {
  if (facts.kept_room_at && *facts.kept_room_at < snapshot.replicas.size() &&
      snapshot.replicas[*facts.kept_room_at].healthy && starts_new_task(facts)) {
    return Decision{facts.kept_room_at, Route::new_conversation, NoReplicaReason::none};
  }
  const TaskAdmissionRule task = admit_new_task(snapshot, facts);
  const Admission admission = admit_new_conversation(snapshot, facts);
  if (task == TaskAdmissionRule::hold || admission == Admission::hold) {
    return none(Route::queued, NoReplicaReason::none);
  }
  const double mark = water_mark(snapshot);
  const auto eligible = [&](ReplicaIndex i) {
    const ReplicaState& r = snapshot.replicas[i];
    return r.healthy &&
           (task != TaskAdmissionRule::with_room || has_task_room(snapshot, r, facts.prompt_tokens)) &&
           (admission != Admission::with_room ||
            can_admit(r, facts.prompt_tokens, mark, snapshot.routing.admission.only_when_waiting));
  };
  if (auto chosen = place_among(snapshot, facts, eligible, rng)) {
    return Decision{chosen, Route::new_conversation, NoReplicaReason::none};
  }
  // Each admission found room, but not on the same replica: the task's rule goes first.
  if (task == TaskAdmissionRule::with_room && admission == Admission::with_room) {
    return none(Route::queued, NoReplicaReason::none);
  }
  return none(Route::new_conversation, NoReplicaReason::no_healthy_replica);
}

// A session's next task that its home has no room for (core/task_admission.hpp): moved to the best replica
// that has, or held while none has.
Decision place_next_task(const Snapshot& snapshot, const RequestFacts& facts, ReplicaIndex home,
                         NextTaskRule rule, Rng& rng) {
  if (rule == NextTaskRule::hold) {
    return none(Route::queued, NoReplicaReason::none);
  }
  const auto room = [&](ReplicaIndex i) {
    const ReplicaState& r = snapshot.replicas[i];
    return i != home && r.healthy && has_next_task_room(r, facts.prompt_tokens);
  };
  const auto score = [&](const ReplicaState& r) { return placement_score(r, snapshot.max_num_seqs()); };
  if (auto chosen = detail::pick_min(snapshot, room, score, rng)) {
    return Decision{chosen, Route::rehomed, NoReplicaReason::none};
  }
  return none(Route::queued, NoReplicaReason::none);
}

// Rule 5 by count: over the threshold, move this one request to the least-loaded other replica, but never
// to one that is at least as loaded as home (that would lose the cache and gain nothing).
Decision spill_by_count(const Snapshot& snapshot, ReplicaIndex home, Rng& rng) {
  const ReplicaState& at_home = snapshot.replicas[home];
  if (at_home.in_flight <= snapshot.spill_threshold()) {
    return Decision{home, Route::sticky, NoReplicaReason::none};
  }
  const auto other = [&](ReplicaIndex i) { return i != home && snapshot.replicas[i].healthy; };
  const auto score = [&](const ReplicaState& r) { return load_score(r, snapshot.max_num_seqs()); };
  const auto target = detail::pick_min(snapshot, other, score, rng);
  if (target && score(snapshot.replicas[*target]) < score(at_home) - detail::tie_epsilon) {
    return Decision{target, Route::spilled, NoReplicaReason::none};
  }
  return Decision{home, Route::sticky, NoReplicaReason::none};
}

}  // namespace

double placement_score(const ReplicaState& replica, std::uint32_t max_num_seqs) {
  // Slot pressure: live requests plus the conversations that will send the next ones. Memory pressure:
  // what is allocated now, or what the working set needs if that is larger (the two overlap, so they are
  // not added).
  return static_cast<double>(slots_of(replica)) / std::max<std::uint32_t>(1, max_num_seqs) +
         memory_with(replica, 0);
}

std::uint64_t cached_start_slots(std::uint32_t max_num_seqs) {
  return std::max<std::uint64_t>(1, max_num_seqs / cached_start_seqs_per_slot);
}

double load_score(const ReplicaState& replica, std::uint32_t max_num_seqs) {
  const double seqs = std::max<std::uint32_t>(1, max_num_seqs);
  return (static_cast<double>(replica.in_flight) + replica.peer_in_flight) / seqs +
         std::clamp(replica.kv_usage, 0.0, 1.0);
}

double vllm_lb_score(VllmBalancerModel model, const VllmLbLoad& load) {
  if (model == VllmBalancerModel::legacy) {
    return 4.0 * load.waiting + load.running;
  }
  // The in-flight floor is exact (the balancer's own unfinished requests); the published counts raise the
  // score when other servers load the rank. A queue on a rank whose KV cache is over half full drains
  // slowly, so its waiting requests weigh up to 3x more.
  double score = std::max(load.in_flight, load.waiting + load.running);
  if (load.waiting > 0) {
    score += load.waiting * 6.0 * std::max(0.0, load.kv_usage - 0.5);
  }
  return score;
}

double vllm_lb_score(const ReplicaState& replica, VllmBalancerModel model) {
  if (model == VllmBalancerModel::legacy) {
    return 4.0 * replica.waiting + replica.running + replica.sent_since_scrape;
  }
  VllmLbLoad load;
  load.waiting = static_cast<double>(replica.waiting) + replica.sent_since_scrape;
  load.running = replica.running;
  load.in_flight = replica.in_flight;
  load.kv_usage = std::clamp(replica.kv_usage, 0.0, 1.0);
  return vllm_lb_score(model, load);
}

std::optional<Decision> decide_pin(const Snapshot& snapshot, const RequestFacts& facts) {
  if (!facts.pin) {
    return std::nullopt;
  }
  if (snapshot.replicas.empty()) {
    return none(Route::pinned, NoReplicaReason::no_replicas);
  }
  if (*facts.pin >= snapshot.replicas.size()) {
    return none(Route::pinned, NoReplicaReason::pin_out_of_range);
  }
  return Decision{facts.pin, Route::pinned, NoReplicaReason::none};
}

std::size_t healthy_count(const Snapshot& snapshot) {
  return static_cast<std::size_t>(std::count_if(snapshot.replicas.begin(), snapshot.replicas.end(),
                                                [](const auto& r) { return r.healthy; }));
}

Decision decide_balanced(const Snapshot& snapshot, const RequestFacts& facts, Rng& rng) {
  if (auto pinned = decide_pin(snapshot, facts)) {
    return *pinned;
  }
  if (snapshot.replicas.empty()) {
    return none(Route::balanced, NoReplicaReason::no_replicas);
  }
  const auto healthy = [&](ReplicaIndex i) { return snapshot.replicas[i].healthy; };
  const auto score = [&](const ReplicaState& r) { return vllm_lb_score(r, snapshot.routing.vllm_balancer); };
  if (auto chosen = detail::pick_min(snapshot, healthy, score, rng)) {
    return Decision{chosen, Route::balanced, NoReplicaReason::none};
  }
  return none(Route::balanced, NoReplicaReason::no_healthy_replica);
}

Decision decide(const Snapshot& snapshot, const RequestFacts& facts, Rng& rng) {
  if (!snapshot.routing.affinity) {
    return decide_balanced(snapshot, facts, rng);
  }
  if (auto pinned = decide_pin(snapshot, facts)) {
    return *pinned;
  }
  if (snapshot.replicas.empty()) {
    return none(facts.home ? Route::failover : Route::new_conversation, NoReplicaReason::no_replicas);
  }
  if (!facts.home) {
    return place_new(snapshot, facts, rng);
  }
  const ReplicaIndex home = *facts.home;
  if (home >= snapshot.replicas.size() || !snapshot.replicas[home].healthy) {
    return place(snapshot, Route::failover, rng);
  }
  if (hold_task_start(snapshot, facts, home)) {
    return none(Route::queued, NoReplicaReason::none);
  }
  if (const NextTaskRule next = next_task_rule(snapshot, facts, home); next != NextTaskRule::as_usual) {
    return place_next_task(snapshot, facts, home, next, rng);
  }
  if (snapshot.routing.rebalance) {
    if (const auto moved = rebalance_target(snapshot, facts, home, rng)) {
      return Decision{moved, Route::rehomed, NoReplicaReason::none};
    }
  }
  if (snapshot.routing.cost_spill.enabled && predicted_ttft(snapshot.replicas[home], 0)) {
    const auto target = cost_spill_target(snapshot, facts, home, rng);
    return target ? Decision{target, Route::spilled, NoReplicaReason::none}
                  : Decision{home, Route::sticky, NoReplicaReason::none};
  }
  return spill_by_count(snapshot, home, rng);
}

}  // namespace warden::core
