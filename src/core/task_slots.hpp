#pragma once
// Task slots: whole agent tasks held to what the replicas' caches hold. Each replica has as many slots as
// its KV capacity holds threads of one task's working set; a task under way occupies one on the replica
// its first request went to, from that request until the task ends. A task's start is placed only on a
// replica with a free slot and waits (FIFO, up to max_wait) while none has one; a request of a task under
// way is never held. RequestFacts::task_room carries the result to decide().
//
// A task's end is told by what the warden sees of the requests alone: the session's next task start, or the
// session quiet (nothing in flight) for `quiet` after its last request ended. Between tasks the user reads
// the reply; within one, tools run for a second or two, and subagents keep the session in flight.

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/types.hpp"

namespace warden::core {

struct TaskSlotsConfig {
  bool enabled = false;
  /// Tokens of KV one task under way is counted to hold: a replica has capacity / task_tokens slots (at
  /// least one). 0 = measured: the mean largest prompt of the tasks that ended (of those under way until
  /// one has).
  std::uint32_t task_tokens = 0;
  /// When > 0, slots are counted in tokens instead: a replica has room for a task start of P prompt tokens
  /// while the largest prompts of its tasks under way plus P stay within fill x its KV capacity.
  double fill = 0.0;
  /// A session with nothing in flight this long after its last request ended has no task under way.
  Time quiet = std::chrono::seconds(5);
  /// A task start held this long is placed as usual, slots or not.
  Time max_wait = std::chrono::seconds(300);

  friend bool operator==(const TaskSlotsConfig&, const TaskSlotsConfig&) = default;
};

/// What decide() does with a task start whose RequestFacts::task_room is set.
enum class TaskSlotRule : std::uint8_t {
  as_usual,   ///< not a counted task start, or its home has a free slot: route as usual
  elsewhere,  ///< place it among the replicas with a free slot (its home has none, or it has no home)
  hold,       ///< no healthy replica has a free slot: route `queued`
};

[[nodiscard]] TaskSlotRule task_slot_rule(const Snapshot& snapshot, const RequestFacts& facts);

/// The snapshot with every replica outside `room` marked unhealthy, so that placement picks among `room`.
[[nodiscard]] Snapshot only_replicas(const Snapshot& snapshot, ReplicaSet room);

/// The tasks under way of one model, per replica.
class TaskSlots {
 public:
  explicit TaskSlots(TaskSlotsConfig config = {}) : config_(config) {}

  [[nodiscard]] const TaskSlotsConfig& config() const { return config_; }

  /// A task start of `session` (the session's key, shared by its subagents) arrived: its previous task has
  /// ended, whether or not the new one is placed at once.
  void task_starting(std::uint64_t session, Time now);
  /// A request of `session` went to `replica`: a task start occupies a slot there; any other request
  /// joins its session's task under way, or occupies a slot on `replica` when it has none (its task's
  /// start was not seen, or it was quiet for longer than `quiet`).
  void routed(std::uint64_t session, ReplicaIndex replica, bool task_start, std::uint32_t prompt_tokens,
              Time now);
  /// A request of `session` ended (answered, failed or abandoned).
  void finished(std::uint64_t session, Time now);

  /// Replicas (healthy, first replica_set_size) with room for a task start of `prompt_tokens`: fewer tasks
  /// under way than slots (or, with `fill`, their tokens within it).
  [[nodiscard]] ReplicaSet room(std::span<const ReplicaState> replicas, std::uint32_t prompt_tokens,
                                Time now);
  /// Slots of a replica with `kv_capacity_tokens` of KV (0 = unknown: unbounded).
  [[nodiscard]] std::uint32_t slots(std::uint64_t kv_capacity_tokens) const;
  [[nodiscard]] std::uint32_t under_way(ReplicaIndex replica, Time now);
  /// When the next quiet session's task ends (a slot frees then), if any.
  [[nodiscard]] std::optional<Time> next_quiet_end() const;
  /// The tokens one task is counted to hold (config's or measured; 0 = nothing known yet).
  [[nodiscard]] double task_tokens() const;

 private:
  struct Task {
    ReplicaIndex replica = 0;
    std::uint32_t in_flight = 0;
    Time last_end{0};
    std::uint32_t peak_tokens = 0;
  };
  void end(std::unordered_map<std::uint64_t, Task>::iterator it);
  void expire(Time now);

  TaskSlotsConfig config_;
  std::unordered_map<std::uint64_t, Task> tasks_;
  std::vector<std::uint32_t> per_replica_;
  double ended_tokens_ = 0;  // sum of ended tasks' peak prompts
  std::uint64_t ended_ = 0;
};

}  // namespace warden::core
