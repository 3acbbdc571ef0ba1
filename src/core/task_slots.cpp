#include "core/task_slots.hpp"

#include <algorithm>
#include <cmath>

namespace warden::core {

namespace {

bool in_set(ReplicaSet set, ReplicaIndex i) {
  return i < replica_set_size && (set >> i & 1) != 0;
}

}  // namespace

TaskSlotRule task_slot_rule(const Snapshot& snapshot, const RequestFacts& facts) {
  if (!facts.task_start || !facts.task_room) {
    return TaskSlotRule::as_usual;
  }
  const ReplicaSet room = *facts.task_room;
  bool any = false;
  for (ReplicaIndex i = 0; i < snapshot.replicas.size(); ++i) {
    any = any || (snapshot.replicas[i].healthy && in_set(room, i));
  }
  if (!any) {
    return TaskSlotRule::hold;
  }
  const bool home_has_slot = facts.home && *facts.home < snapshot.replicas.size() &&
                             snapshot.replicas[*facts.home].healthy && in_set(room, *facts.home);
  return home_has_slot ? TaskSlotRule::as_usual : TaskSlotRule::elsewhere;
}

Snapshot only_replicas(const Snapshot& snapshot, ReplicaSet room) {
  Snapshot only = snapshot;
  for (ReplicaIndex i = 0; i < only.replicas.size(); ++i) {
    only.replicas[i].healthy = only.replicas[i].healthy && in_set(room, i);
  }
  return only;
}

void TaskSlots::task_starting(std::uint64_t session, Time now) {
  expire(now);
  if (const auto it = tasks_.find(session); it != tasks_.end()) {
    end(it);
  }
}

void TaskSlots::routed(std::uint64_t session, ReplicaIndex replica, bool task_start,
                       std::uint32_t prompt_tokens, Time now) {
  expire(now);
  auto it = tasks_.find(session);
  if (task_start && it != tasks_.end()) {
    end(it);
    it = tasks_.end();
  }
  if (it == tasks_.end()) {
    it = tasks_.emplace(session, Task{.replica = replica}).first;
    if (per_replica_.size() <= replica) {
      per_replica_.resize(replica + 1, 0);
    }
    ++per_replica_[replica];
  }
  ++it->second.in_flight;
  it->second.peak_tokens = std::max(it->second.peak_tokens, prompt_tokens);
}

void TaskSlots::finished(std::uint64_t session, Time now) {
  const auto it = tasks_.find(session);
  if (it == tasks_.end() || it->second.in_flight == 0) {
    return;
  }
  --it->second.in_flight;
  it->second.last_end = now;
}

ReplicaSet TaskSlots::room(std::span<const ReplicaState> replicas, std::uint32_t prompt_tokens, Time now) {
  expire(now);
  std::vector<double> tokens(replicas.size(), 0.0);
  for (const auto& [session, task] : tasks_) {
    if (task.replica < tokens.size()) {
      tokens[task.replica] += task.peak_tokens;
    }
  }
  ReplicaSet set = 0;
  for (ReplicaIndex i = 0; i < replicas.size() && i < replica_set_size; ++i) {
    const std::uint32_t busy = i < per_replica_.size() ? per_replica_[i] : 0;
    const auto capacity = static_cast<double>(replicas[i].warm_capacity_tokens());
    const bool fits = config_.fill > 0
                          ? capacity == 0 || busy == 0 || tokens[i] + prompt_tokens <= config_.fill * capacity
                          : busy < slots(replicas[i].warm_capacity_tokens());
    if (replicas[i].healthy && fits) {
      set |= ReplicaSet{1} << i;
    }
  }
  return set;
}

std::uint32_t TaskSlots::slots(std::uint64_t kv_capacity_tokens) const {
  const double per_task = task_tokens();
  if (kv_capacity_tokens == 0 || per_task <= 0) {
    return UINT32_MAX;
  }
  const double n = std::floor(static_cast<double>(kv_capacity_tokens) / per_task);
  return static_cast<std::uint32_t>(std::clamp(n, 1.0, 1e6));
}

std::uint32_t TaskSlots::under_way(ReplicaIndex replica, Time now) {
  expire(now);
  return replica < per_replica_.size() ? per_replica_[replica] : 0;
}

std::optional<Time> TaskSlots::next_quiet_end() const {
  std::optional<Time> next;
  for (const auto& [session, task] : tasks_) {
    if (task.in_flight == 0 && (!next || task.last_end + config_.quiet < *next)) {
      next = task.last_end + config_.quiet;
    }
  }
  return next;
}

double TaskSlots::task_tokens() const {
  if (config_.task_tokens > 0) {
    return config_.task_tokens;
  }
  if (ended_ > 0) {
    return ended_tokens_ / static_cast<double>(ended_);
  }
  // Nothing ended yet: the tasks under way as they are now.
  double sum = 0;
  for (const auto& [session, task] : tasks_) {
    sum += task.peak_tokens;
  }
  return tasks_.empty() ? 0.0 : sum / static_cast<double>(tasks_.size());
}

void TaskSlots::end(std::unordered_map<std::uint64_t, Task>::iterator it) {
  --per_replica_[it->second.replica];
  ended_tokens_ += it->second.peak_tokens;
  ++ended_;
  tasks_.erase(it);
}

void TaskSlots::expire(Time now) {
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    const auto next = std::next(it);
    if (it->second.in_flight == 0 && it->second.last_end + config_.quiet <= now) {
      end(it);
    }
    it = next;
  }
}

}  // namespace warden::core
