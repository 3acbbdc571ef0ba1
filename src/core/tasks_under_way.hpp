#pragma once
// The agent tasks under way of one model, per replica, told from the requests alone: a task starts with a
// request of its session's main thread that offers tools, lives on the replica that thread is served by,
// and ends with the main thread's final text (a reply without tool calls), or when its session has sent
// nothing for `idle` (an agent that stopped), or when the client left its first request before any answer
// (an abandoned start is no task). Subagents belong to their session's task. Each task's main thread's
// prompt is followed as it grows, and each task counts against its tenant (RequestFacts::tenant). An
// interactive task that ended may keep its room (answered(), `keep_room`): a person reads its answer and
// types the next task, which task admission never holds, so the room stays counted on its replica until
// that task starts there or the person stays away (expire()); the headless starts wait instead. Pure:
// time is a parameter. Bounded (max_tasks, the least recently seen task ends beyond it), and linked most
// recently seen first, so that forgetting silent tasks takes them from the end of the list, a bounded
// number per call, never a walk over a table a client can fill.

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/replica_remap.hpp"
#include "core/slab.hpp"
#include "core/slot_index.hpp"
#include "core/types.hpp"

namespace warden::core {

class TasksUnderWay {
 public:
  /// Tasks ended per expire() call at most (the rest on the next calls).
  static constexpr std::size_t expire_budget = 256;
  /// Rooms kept at most (one per person reading; beyond, the room kept longest ends).
  static constexpr std::size_t max_kept = 4096;

  explicit TasksUnderWay(std::size_t max_tasks = 1'000'000);
  /// A request of `facts` went to `decision.replica` (a spilled request does not move its task).
  void routed(const RequestFacts& facts, const Decision& decision, Time now);
  /// The reply to a request of `facts` ended; with `final_text` on the main thread, its task has ended. With
  /// `keep_room`, an interactive task's end keeps its room: it still counts on its replica (on(),
  /// tokens_on(), of_tenant()) but is no task under way for its session (under_way()), whose next request
  /// starts its next task in it (room_kept()).
  void answered(const RequestFacts& facts, bool final_text, bool keep_room = false);
  /// The client of a request of `facts` left before any answer: a task no request of which was ever
  /// answered ends (its start was abandoned; the client may send it again as a new start).
  void left_unanswered(const RequestFacts& facts);
  /// Forgets the tasks whose session sent nothing for `idle` by `now`, looking at most every idle / 16 (a
  /// task outlives its silence by that much at most), `expire_budget` tasks per call at most: a crowd
  /// that fell silent together ends over several calls. A room kept for a person ends once `room` has
  /// passed since its session's last request.
  void expire(Time now, Time idle, Time room = Time{0});
  /// Whether the session of `facts` has a task under way.
  [[nodiscard]] bool under_way(const RequestFacts& facts) const;
  /// Whether the session of `facts` has the room of its interactive task that ended kept for its next.
  [[nodiscard]] bool room_kept(const RequestFacts& facts) const;
  /// The replica of the room kept longest for a person of `tenant` (none kept: nullopt). A person who
  /// starts a new session (Claude Code's `/clear`) leaves the room of its last one kept: a new interactive
  /// task of the tenant takes it over (routed()).
  [[nodiscard]] std::optional<ReplicaIndex> kept_room_of(std::uint64_t tenant) const;
  /// Tasks under way on `replica`.
  [[nodiscard]] std::uint32_t on(ReplicaIndex replica) const {
    return replica < per_replica_.size() ? per_replica_[replica].tasks : 0;
  }
  /// The sum of the last prompts of the main threads of the tasks under way on `replica`.
  [[nodiscard]] std::uint64_t tokens_on(ReplicaIndex replica) const {
    return replica < per_replica_.size() ? per_replica_[replica].tokens : 0;
  }
  [[nodiscard]] std::size_t size() const { return index_.size(); }
  /// The first prompt of the task under way of the session of `facts` (its main thread's first request).
  [[nodiscard]] std::optional<std::uint32_t> first_prompt(const RequestFacts& facts) const;
  /// Adds to out[r], for each task under way on replica r < out.size(), its main thread's last prompt and
  /// `left(grown)`: what it is expected to add still, having grown by `grown` tokens since its first prompt
  /// (negative after a compaction).
  template <class Left>
  void project(std::span<double> out, Left&& left) const {
    for (std::uint32_t slot = list_.head; slot != nil; slot = tasks_[slot].next) {
      const Task& task = tasks_[slot];
      if (task.replica < out.size()) {
        const double grown = static_cast<double>(task.tokens) - static_cast<double>(task.first);
        out[task.replica] += static_cast<double>(task.tokens) + left(grown);
      }
    }
  }
  /// Who a session's task under way is for (the admin API's threads): its class of work and tenant.
  struct TaskOwner {
    WorkClass work_class = WorkClass::headless;
    std::uint64_t tenant = 0;
  };
  [[nodiscard]] std::optional<TaskOwner> owner(std::uint64_t session) const {
    const std::uint32_t* slot = index_.find(session);
    return slot == nullptr ? std::nullopt
                           : std::optional<TaskOwner>({tasks_[*slot].work_class, tasks_[*slot].tenant});
  }
  /// Tasks under way of `tenant` (RequestFacts::tenant), on every replica.
  [[nodiscard]] std::uint32_t of_tenant(std::uint64_t tenant) const {
    const auto it = per_tenant_.find(tenant);
    return it == per_tenant_.end() ? 0 : it->second;
  }
  /// Every task ends (their agents stopped: the what-if driver between levels).
  void clear();
  /// A reload relaid the replicas: a task on a removed replica ends.
  void remap(const ReplicaRemap& remap);

 private:
  static constexpr std::uint32_t nil = 0xFFFFFFFFu;
  struct Task {
    std::uint64_t key = 0;  // its session's
    Time last_seen{};
    std::uint64_t tenant = 0;
    ReplicaIndex replica = 0;
    std::uint32_t tokens = 0;  // its main thread's last prompt
    std::uint32_t first = 0;   // its main thread's first prompt
    std::uint32_t prev = nil;  // seen more recently
    std::uint32_t next = nil;  // seen less recently
    WorkClass work_class = WorkClass::headless;
    bool answered = false;       // a reply to one of its requests ended
    bool kept = false;           // an interactive task that ended: its room kept for the person's next task
    std::uint32_t kept_seq = 0;  // which keeping of its room (kept_) is the current one
  };
  // A room kept: its session's key and the keeping's number (the task's next task makes it stale).
  struct Kept {
    std::uint64_t key = 0;
    std::uint32_t seq = 0;
  };
  struct Load {
    std::uint32_t tasks = 0;
    std::uint64_t tokens = 0;
  };
  void add(const Task& task);
  void remove(const Task& task);
  void start(const RequestFacts& facts, ReplicaIndex replica, Time now);
  void end(std::uint32_t slot);
  void forget(std::uint32_t slot);
  [[nodiscard]] const Task* find(std::uint64_t key) const;
  // The slot of the task whose room `kept` names, while it is still kept (nil: stale).
  [[nodiscard]] std::uint32_t kept_slot(const Kept& kept) const;
  // A new interactive task of `tenant` on `replica` takes over the room kept longest there for its tenant.
  void take_kept_room(std::uint64_t tenant, ReplicaIndex replica);

  std::size_t max_tasks_;
  SlotIndex index_;  // session key -> slot
  Slab<Task> tasks_;
  SlabList list_;
  Time latest_{};
  std::vector<Load> per_replica_;
  std::unordered_map<std::uint64_t, std::uint32_t> per_tenant_;  // tasks, by tenant
  Time next_walk_{};    // expire() looks for silent tasks from then on
  Time walk_cutoff_{};  // and ends those seen at or before this (a walk that stopped at the budget)
  bool walking_ = false;
  std::deque<Kept> kept_;  // rooms kept, in the order they were kept (stale ones dropped as met)
  std::uint32_t kept_seq_ = 0;
};

}  // namespace warden::core
