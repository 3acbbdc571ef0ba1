#include "core/admission.hpp"

#include <algorithm>

namespace warden::core {

double water_mark(const Snapshot& snapshot) {
  return snapshot.admission_holding ? snapshot.routing.admission.low_water
                                    : snapshot.routing.admission.high_water;
}

bool has_room(const ReplicaState& replica, std::uint64_t prompt_tokens, double mark) {
  // Host-memory blocks count: a conversation whose prefix vLLM offloaded is loaded back, not recomputed.
  if (replica.warm_capacity_tokens() == 0) {
    return true;
  }
  const auto capacity = static_cast<double>(replica.warm_capacity_tokens());
  // What the engine holds for requests running now counts too: a conversation whose turn outlasts the
  // active window is still resident.
  // Other wardens' conversations on the replica are resident too.
  const double held =
      static_cast<double>(replica.held_tokens) + static_cast<double>(replica.peer_held_tokens);
  const double resident = std::max(held, replica.kv_usage * capacity);
  return resident + static_cast<double>(prompt_tokens) <= mark * capacity;
}

bool can_admit(const ReplicaState& replica, std::uint64_t prompt_tokens, double mark,
               bool only_when_waiting) {
  // Nothing waiting at the last scrape and every request sent since answering: the engine is not short of
  // KV, whatever the estimate says (AdmissionConfig::only_when_waiting).
  const bool idle_queue = replica.waiting == 0 && replica.prefill_backlog_tokens == 0;
  return replica.healthy && ((only_when_waiting && idle_queue) || has_room(replica, prompt_tokens, mark));
}

Admission admit_new_conversation(const Snapshot& snapshot, const RequestFacts& facts) {
  if (!snapshot.routing.admission.enabled || facts.queued_for >= snapshot.routing.admission.max_wait) {
    return Admission::anywhere;
  }
  const double mark = water_mark(snapshot);
  bool any_known = false;
  bool any_room = false;
  for (const ReplicaState& r : snapshot.replicas) {
    if (!r.healthy) {
      continue;
    }
    any_known = any_known || r.kv_capacity_tokens > 0;
    any_room =
        any_room || can_admit(r, facts.prompt_tokens, mark, snapshot.routing.admission.only_when_waiting);
  }
  if (!any_known) {
    return Admission::anywhere;
  }
  return any_room ? Admission::with_room : Admission::hold;
}

bool hold_task_start(const Snapshot& snapshot, const RequestFacts& facts, ReplicaIndex home) {
  const AdmissionConfig& a = snapshot.routing.admission;
  if (!a.enabled || !a.hold_task_starts || !facts.task_start || facts.queued_for >= a.max_wait) {
    return false;
  }
  return !can_admit(snapshot.replicas[home], facts.prompt_tokens, water_mark(snapshot), a.only_when_waiting);
}

}  // namespace warden::core
