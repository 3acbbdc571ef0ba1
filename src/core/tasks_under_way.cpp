#include "core/tasks_under_way.hpp"

#include <iterator>

namespace warden::core {

namespace {

// The session a request's task belongs to (its main thread's key), and whether it is the main thread.
std::uint64_t task_key(const RequestFacts& facts) {
  return facts.thread.session != 0 ? facts.thread.session : facts.session->hash;
}

bool counts(const RequestFacts& facts) {
  return facts.session && facts.offers_tools && !facts.thread.side;
}

}  // namespace

void TasksUnderWay::place(Task& task, ReplicaIndex replica) {
  if (per_replica_.size() <= replica) {
    per_replica_.resize(replica + 1, 0);
  }
  ++per_replica_[replica];
  task.replica = replica;
}

void TasksUnderWay::end(std::unordered_map<std::uint64_t, Task>::iterator it) {
  if (it->second.replica < per_replica_.size() && per_replica_[it->second.replica] > 0) {
    --per_replica_[it->second.replica];
  }
  tasks_.erase(it);
}

void TasksUnderWay::routed(const RequestFacts& facts, const Decision& decision, Time now) {
  if (!counts(facts) || !decision.replica) {
    return;
  }
  const std::uint64_t key = task_key(facts);
  const bool main_thread = key == facts.session->hash;
  const auto it = tasks_.find(key);
  if (it == tasks_.end()) {
    if (main_thread) {
      place(tasks_[key], *decision.replica);
      tasks_[key].last_seen = now;
    }
    return;
  }
  it->second.last_seen = now;
  const bool moves = main_thread && decision.route != Route::spilled && decision.route != Route::pinned &&
                     *decision.replica != it->second.replica;
  if (moves) {
    --per_replica_[it->second.replica];
    place(it->second, *decision.replica);
  }
}

void TasksUnderWay::answered(const RequestFacts& facts, bool final_text) {
  if (!final_text || !counts(facts) || task_key(facts) != facts.session->hash) {
    return;
  }
  if (const auto it = tasks_.find(facts.session->hash); it != tasks_.end()) {
    end(it);
  }
}

void TasksUnderWay::expire(Time now, Time idle) {
  if (now < next_walk_) {
    return;
  }
  next_walk_ = now + idle / 16;
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    const auto next = std::next(it);
    if (now - it->second.last_seen >= idle) {
      end(it);
    }
    it = next;
  }
}

void TasksUnderWay::remap(const ReplicaRemap& remap) {
  std::vector<std::uint32_t> moved(remap.new_count, 0);
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    const auto next = std::next(it);
    const ReplicaIndex from = it->second.replica;
    if (from < remap.to.size() && remap.to[from]) {
      it->second.replica = *remap.to[from];
      ++moved[it->second.replica];
    } else {
      tasks_.erase(it);
    }
    it = next;
  }
  per_replica_ = std::move(moved);
}

}  // namespace warden::core
