#pragma once
// Working-set admission of new conversations: whether a replica's resident conversations leave room for
// one more, with hysteresis between a high and a low water mark. Pure, over the Snapshot.

#include "core/types.hpp"

namespace warden::core {

/// What admission says about a new conversation.
enum class Admission : std::uint8_t {
  anywhere,   ///< admission off, capacities unknown, or the wait bound reached: place as usual
  with_room,  ///< place it only on a replica that has_room()
  hold,       ///< no replica has room: route `queued`
};

/// The water mark in force: low_water while the model is holding (hysteresis), else high_water.
[[nodiscard]] double water_mark(const Snapshot& snapshot);

/// A healthy replica has room for `prompt_tokens` more of working set: its capacity is unknown (nothing
/// to judge by), or max(held_tokens + peer_held_tokens, kv_usage x capacity) + prompt_tokens <= mark x
/// capacity.
[[nodiscard]] bool has_room(const ReplicaState& replica, std::uint64_t prompt_tokens, double mark);

/// A healthy replica that may take a new conversation: it has room, or (with only_when_waiting) no request
/// waits on it (none at the last scrape, none of the warden's without a first token).
[[nodiscard]] bool can_admit(const ReplicaState& replica, std::uint64_t prompt_tokens, double mark,
                             bool only_when_waiting);

/// Admission of a request without a home. Known conversations are never held: a resident conversation
/// keeps its place while it is active, so holding is by conversation, never by turn.
[[nodiscard]] Admission admit_new_conversation(const Snapshot& snapshot, const RequestFacts& facts);

/// A task's start on its healthy home (AdmissionConfig::hold_task_starts): held while the home has no room
/// for its prompt, until the wait bound. Requests of a task under way are never held.
[[nodiscard]] bool hold_task_start(const Snapshot& snapshot, const RequestFacts& facts, ReplicaIndex home);

}  // namespace warden::core
