#pragma once
// Agents past the caches: whole agent tasks held to what the replicas keep warm. An agent task re-reads its
// growing context at every tool round, so once the tasks under way outgrow the replicas' caches each of
// them re-prefills its whole history, again and again (on a 27B model a 58k-token miss is ~18 s of
// prefill). The rule of thumb of the host that started the product — keep sessions x context below the
// host's total cache — applied by the warden: a new task waits while no replica keeps one more task's
// context warm, and is placed among those that do; a session's next task waits while its home's tasks
// under way and its own context overflow the home (or moves to a replica they fit). A task under way is
// never held, nor is an interactive task's start (RequestFacts::work_class: a person waits for it; it goes
// where there is room, or over it, and the headless tasks held wait the longer). Pure, over the Snapshot.

#include "core/types.hpp"

namespace warden::core {

/// A new agent task: no home yet, the main thread of its session (a subagent's first request belongs to a
/// task under way), and tools offered (a chat turn is one request: nothing to keep warm for).
[[nodiscard]] bool starts_new_task(const RequestFacts& facts);

/// Tokens the tasks under way on `replica` will hold: the larger of what its conversations hold now (every
/// warden's) and each of its tasks grown to a task's measured size.
[[nodiscard]] double tasks_working_set(const ReplicaState& replica, double task_tokens);

/// Whether `replica` keeps one more task warm: its warm capacity (GPU cache or host offload, the larger)
/// unknown, nothing under way there, or its tasks' working set plus one more task within it.
[[nodiscard]] bool has_task_room(const ReplicaState& replica, double task_tokens);

/// What decide() does with a request under task admission.
enum class TaskAdmissionRule : std::uint8_t {
  as_usual,   ///< not a new task, admission off, its wait bound reached, or fewer than two tasks kept warm
  with_room,  ///< place it only on a replica that has_task_room()
  hold,       ///< no healthy replica has room, and the task is headless: route `queued`
};

/// The size a task is taken to reach on `replica`: the measured one (Snapshot::task_tokens), or before any
/// task ended 40 % of its warm capacity (two tasks a replica, with room for their growth: a fleet that
/// starts at once is not let in whole before the first task tells how large tasks grow).
[[nodiscard]] double assumed_task_tokens(const Snapshot& snapshot, const ReplicaState& replica);

/// Tokens the tasks under way on `replica` will hold under TaskAdmission::packing growth or remaining: the
/// larger of what its conversations hold now (every warden's) and what its tasks are expected to reach
/// (ReplicaState::tasks_reach_tokens).
[[nodiscard]] double tasks_reach(const ReplicaState& replica);

/// Whether `replica` keeps one more task warm. Packing `mean`, or before any task ended: has_task_room() at
/// the assumed task size. Packing growth or remaining: its warm capacity unknown, nothing under way there,
/// or tasks_reach() plus the new task's first prompt (`prompt_tokens`) grown by a task's measured growth
/// (Snapshot::task_growth) within it. Packing shared: the same, less the shared start
/// (Snapshot::task_start_tokens, at most the prompt) once for each task under way there.
[[nodiscard]] bool has_task_room(const Snapshot& snapshot, const ReplicaState& replica,
                                 std::uint32_t prompt_tokens);

[[nodiscard]] TaskAdmissionRule admit_new_task(const Snapshot& snapshot, const RequestFacts& facts);

/// The next task of a session whose previous task ended: its main thread, with a home (its context is warm
/// there), tools offered, its history ending with the user's words (RequestFacts::task_start: a client
/// that sends tool results is in a task whatever the last reply said), and no task under way.
[[nodiscard]] bool starts_next_task(const RequestFacts& facts);

/// Whether `replica` keeps the next task of a session whose prompt is `prompt_tokens` warm beside its tasks
/// under way: nothing is under way there, or their contexts as they are now and this one's fit its warm
/// capacity.
[[nodiscard]] bool has_next_task_room(const ReplicaState& replica, std::uint32_t prompt_tokens);

/// What decide() does with a session's next task. Contexts grow from one task of a session to the next, so
/// replicas whose sessions were let in small outgrow their caches: a session's next task stays home while
/// the home has room for it, else moves to a replica that has (one prefill of its context, against waiting
/// for a task to end), else waits until a task ends or its wait bound. Never a task under way.
enum class NextTaskRule : std::uint8_t {
  as_usual,   ///< not a session's next task, task admission off, its wait bound reached, room at home, its
              ///< room at home kept for it (RequestFacts::room_kept), or fewer than two tasks kept warm
  elsewhere,  ///< place it among the other healthy replicas with has_next_task_room()
  hold,       ///< no healthy replica has room, and the task is headless: route `queued`
};

[[nodiscard]] NextTaskRule next_task_rule(const Snapshot& snapshot, const RequestFacts& facts,
                                          ReplicaIndex home);

/// Whether every healthy replica keeps about two tasks warm (at least 1.75:
/// ReplicaState::warm_capacity_tokens against the measured Snapshot::task_tokens or, before a task has ended,
/// the share task admission assumes). Elsewhere task admission holds nothing (admit_new_task and
/// next_task_rule answer as_usual): a replica held to one task idles between its agent's rounds for longer
/// than the misses of a second would cost.
[[nodiscard]] bool keeps_two_tasks_warm(const Snapshot& snapshot);

/// The wait bound of a held task start: TaskAdmission::max_wait, or when its client's wait is kept alive
/// (RequestFacts::kept_alive: no client timeout bounds it) stream_max_wait; auto: its long bound
/// (TaskAdmission::auto_stream_max_wait) where keeps_two_tasks_warm(), else max_wait. Where a replica keeps
/// less than two tasks warm, holding a start longer idles its GPU instead of saving a prefill.
[[nodiscard]] Time task_max_wait(const Snapshot& snapshot, const RequestFacts& facts);
/// The longest that bound can be under `rule` (auto: its long bound): what a hold queue waits at most.
[[nodiscard]] Time task_max_wait(const TaskAdmission& rule, bool kept_alive);

/// The longest a request whose wait is kept alive or not (`kept_alive`) is held under `routing`:
/// admission's max_wait, or task admission's bound for it when task admission is on and that is longer (a
/// held request's wait bound is the one of the rule that holds it; a queue wakes each held request at its
/// longest, having routed it again at every finish and scrape before).
[[nodiscard]] Time longest_hold(const RoutingConfig& routing, bool kept_alive);

/// The Router's measure of a task's size: a running mean over the last prompt of each task that ended
/// (about the last 16 weigh in).
[[nodiscard]] double next_task_tokens(double mean, std::uint32_t ended_task_prompt);

}  // namespace warden::core
