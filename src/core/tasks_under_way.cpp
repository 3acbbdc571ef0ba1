#include "core/tasks_under_way.hpp"

#include <algorithm>
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

void TasksUnderWay::add(const Task& task) {
  if (per_replica_.size() <= task.replica) {
    per_replica_.resize(task.replica + 1);
  }
  ++per_replica_[task.replica].tasks;
  per_replica_[task.replica].tokens += task.tokens;
}

void TasksUnderWay::remove(const Task& task) {
  if (task.replica < per_replica_.size()) {
    Load& at = per_replica_[task.replica];
    at.tasks -= std::min<std::uint32_t>(at.tasks, 1);
    at.tokens -= std::min<std::uint64_t>(at.tokens, task.tokens);
  }
}

void TasksUnderWay::end(std::unordered_map<std::uint64_t, Task>::iterator it) {
  remove(it->second);
  if (const auto t = per_tenant_.find(it->second.tenant); t != per_tenant_.end() && --t->second == 0) {
    per_tenant_.erase(t);
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
      add(tasks_
              .emplace(key, Task{*decision.replica, now, facts.prompt_tokens, facts.prompt_tokens,
                                 facts.tenant, facts.work_class})
              .first->second);
      ++per_tenant_[facts.tenant];
    }
    return;
  }
  Task& task = it->second;
  task.last_seen = now;
  if (!main_thread) {
    return;
  }
  remove(task);
  if (decision.route != Route::spilled && decision.route != Route::pinned) {
    task.replica = *decision.replica;  // a spilled or pinned request does not move its task
  }
  task.tokens = facts.prompt_tokens;
  add(task);
}

void TasksUnderWay::answered(const RequestFacts& facts, bool final_text) {
  if (!counts(facts)) {
    return;
  }
  const auto it = tasks_.find(task_key(facts));
  if (it == tasks_.end()) {
    return;
  }
  it->second.answered = true;
  if (final_text && task_key(facts) == facts.session->hash) {
    end(it);
  }
}

void TasksUnderWay::left_unanswered(const RequestFacts& facts) {
  if (!counts(facts)) {
    return;
  }
  if (const auto it = tasks_.find(task_key(facts)); it != tasks_.end() && !it->second.answered) {
    end(it);
  }
}

std::optional<std::uint32_t> TasksUnderWay::first_prompt(const RequestFacts& facts) const {
  if (!counts(facts)) {
    return std::nullopt;
  }
  const auto it = tasks_.find(task_key(facts));
  return it == tasks_.end() ? std::nullopt : std::optional<std::uint32_t>(it->second.first);
}

bool TasksUnderWay::under_way(const RequestFacts& facts) const {
  return counts(facts) && tasks_.contains(task_key(facts));
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
  per_tenant_.clear();
  std::vector<Load> moved(remap.new_count);
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    const auto next = std::next(it);
    Task& task = it->second;
    if (task.replica < remap.to.size() && remap.to[task.replica]) {
      task.replica = *remap.to[task.replica];
      ++moved[task.replica].tasks;
      moved[task.replica].tokens += task.tokens;
      ++per_tenant_[task.tenant];
    } else {
      tasks_.erase(it);
    }
    it = next;
  }
  per_replica_ = std::move(moved);
}

}  // namespace warden::core
