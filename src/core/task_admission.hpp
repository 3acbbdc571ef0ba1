#pragma once
// Agents past the caches: whole agent tasks held to what the replicas keep warm. An agent task re-reads its
// growing context at every tool round, so once the tasks under way outgrow the replicas' caches each of
// them re-prefills its whole history, again and again (on a 27B model a 58k-token miss is ~18 s of
// prefill). The rule of thumb of the host that started the product — keep sessions x context below the
// host's total cache — applied by the warden: a new task waits while no replica keeps one more task's
// context warm, and is placed among those that do. A task under way is never held. Pure, over the Snapshot.

#include "core/types.hpp"

namespace warden::core {

/// A new agent task: no home yet, the main thread of its session (a subagent's first request belongs to a
/// task under way), and tools offered (a chat turn is one request: nothing to keep warm for).
[[nodiscard]] bool starts_new_task(const RequestFacts& facts);

/// Tokens the tasks under way on `replica` will hold: the larger of what its conversations hold now (every
/// warden's) and each of its tasks grown to a task's measured size.
[[nodiscard]] double tasks_working_set(const ReplicaState& replica, double task_tokens);

/// Whether `replica` keeps one more task warm: its warm capacity (GPU cache or host offload, the larger)
/// unknown, nothing under way there, or its tasks' working set plus one more task within the share of it
/// that tasks may fill (80 %: the rest holds subagents, running sequences and a hybrid model's state).
[[nodiscard]] bool has_task_room(const ReplicaState& replica, double task_tokens);

/// What decide() does with a request under task admission.
enum class TaskAdmissionRule : std::uint8_t {
  as_usual,   ///< not a new task, admission off, no task measured yet, or its wait bound reached
  with_room,  ///< place it only on a replica that has_task_room()
  hold,       ///< no healthy replica has room: route `queued`
};

/// The size a task is taken to reach on `replica`: the measured one (Snapshot::task_tokens), or before any
/// task ended half the share tasks may fill (two tasks a replica: a fleet that starts at once is not let
/// in whole before the first task tells how large tasks grow).
[[nodiscard]] double assumed_task_tokens(const Snapshot& snapshot, const ReplicaState& replica);

/// has_task_room() at the assumed task size.
[[nodiscard]] bool has_task_room(const Snapshot& snapshot, const ReplicaState& replica);

[[nodiscard]] TaskAdmissionRule admit_new_task(const Snapshot& snapshot, const RequestFacts& facts);

/// The longest a request is held under `routing`: admission's max_wait, or task admission's when it is on
/// and longer (a held request's wait bound is the one of the rule that holds it; a queue wakes its head at
/// the longest, having routed it again at every finish and scrape before).
[[nodiscard]] Time longest_hold(const RoutingConfig& routing);

/// The Router's measure of a task's size: a running mean over the last prompt of each task that ended
/// (about the last 16 weigh in).
[[nodiscard]] double next_task_tokens(double mean, std::uint32_t ended_task_prompt);

}  // namespace warden::core
