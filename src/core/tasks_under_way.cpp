#include "core/tasks_under_way.hpp"

#include <algorithm>

namespace warden::core {

namespace {

// The session a request's task belongs to (its main thread's key), and whether it is the main thread.
std::uint64_t task_key(const RequestFacts& facts) {
  return facts.thread.session != 0 ? facts.thread.session : facts.session->hash;
}

bool counts(const RequestFacts& facts) {
  return facts.session && facts.offers_tools && !facts.thread.side;
}

// The index's salt: the session table holds the same keys, and its maps must not double on the same
// request as these (SlotIndex).
constexpr std::uint64_t index_salt = 0x7a5c5a7e5a17ULL;

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

TasksUnderWay::TasksUnderWay(std::size_t max_tasks)
    : max_tasks_(std::clamp<std::size_t>(max_tasks, 1, nil - 1)), index_(index_salt) {}

// Forgets the task in `slot` (its load and tenant's count already taken off, or rebuilt without it).
void TasksUnderWay::forget(std::uint32_t slot) {
  list_.unlink(tasks_, slot);
  index_.erase(tasks_[slot].key);
  tasks_.release(slot);
}

void TasksUnderWay::end(std::uint32_t slot) {
  const Task& task = tasks_[slot];
  remove(task);
  if (const auto t = per_tenant_.find(task.tenant); t != per_tenant_.end() && --t->second == 0) {
    per_tenant_.erase(t);
  }
  forget(slot);
}

const TasksUnderWay::Task* TasksUnderWay::find(std::uint64_t key) const {
  const std::uint32_t* slot = index_.find(key);
  return slot != nullptr ? &tasks_[*slot] : nullptr;
}

// A new task of the session of `facts`, first in the list; the least recently seen ends to make room.
void TasksUnderWay::start(const RequestFacts& facts, ReplicaIndex replica, Time now) {
  if (index_.size() >= max_tasks_) {
    end(list_.tail);
  }
  const std::uint32_t slot = tasks_.take();
  tasks_[slot] = Task{.key = task_key(facts),
                      .last_seen = now,
                      .tenant = facts.tenant,
                      .replica = replica,
                      .tokens = facts.prompt_tokens,
                      .first = facts.prompt_tokens,
                      .work_class = facts.work_class};
  index_.insert(tasks_[slot].key, slot);
  list_.push_front(tasks_, slot);
  add(tasks_[slot]);
  ++per_tenant_[facts.tenant];
}

void TasksUnderWay::routed(const RequestFacts& facts, const Decision& decision, Time now) {
  if (!counts(facts) || !decision.replica) {
    return;
  }
  latest_ = std::max(latest_, now);  // the list stays in the order of last_seen
  const std::uint64_t key = task_key(facts);
  const bool main_thread = key == facts.session->hash;
  const std::uint32_t* found = index_.find(key);
  if (found == nullptr) {
    if (main_thread && facts.work_class == WorkClass::interactive) {
      take_kept_room(facts.tenant, *decision.replica);
    }
    if (main_thread) {
      start(facts, *decision.replica, latest_);
    }
    return;
  }
  const std::uint32_t slot = *found;
  Task& task = tasks_[slot];
  task.last_seen = latest_;
  list_.unlink(tasks_, slot);
  list_.push_front(tasks_, slot);
  if (!main_thread) {
    return;
  }
  if (task.kept) {  // the person's next task starts in the room kept for it
    task.kept = false;
    task.answered = false;
    task.first = facts.prompt_tokens;
  }
  remove(task);
  if (decision.route != Route::spilled && decision.route != Route::pinned) {
    task.replica = *decision.replica;  // a spilled or pinned request does not move its task
  }
  task.tokens = facts.prompt_tokens;
  add(task);
}

void TasksUnderWay::answered(const RequestFacts& facts, bool final_text, bool keep_room) {
  if (!counts(facts)) {
    return;
  }
  const std::uint32_t* slot = index_.find(task_key(facts));
  if (slot == nullptr) {
    return;
  }
  Task& task = tasks_[*slot];
  task.answered = true;
  if (!final_text || task_key(facts) != facts.session->hash || task.kept) {
    return;
  }
  if (!keep_room || task.work_class != WorkClass::interactive) {
    end(*slot);
    return;
  }
  task.kept = true;
  task.kept_seq = ++kept_seq_;
  kept_.push_back(Kept{task.key, task.kept_seq});
  if (kept_.size() > max_kept) {
    if (const std::uint32_t oldest = kept_slot(kept_.front()); oldest != nil) {
      end(oldest);
    }
    kept_.pop_front();
  }
}

void TasksUnderWay::left_unanswered(const RequestFacts& facts) {
  if (!counts(facts)) {
    return;
  }
  if (const std::uint32_t* slot = index_.find(task_key(facts)); slot != nullptr && !tasks_[*slot].answered) {
    end(*slot);
  }
}

std::optional<std::uint32_t> TasksUnderWay::first_prompt(const RequestFacts& facts) const {
  const Task* task = counts(facts) ? find(task_key(facts)) : nullptr;
  return task == nullptr ? std::nullopt : std::optional<std::uint32_t>(task->first);
}

bool TasksUnderWay::under_way(const RequestFacts& facts) const {
  const Task* task = counts(facts) ? find(task_key(facts)) : nullptr;
  return task != nullptr && !task->kept;
}

bool TasksUnderWay::room_kept(const RequestFacts& facts) const {
  const Task* task = counts(facts) ? find(task_key(facts)) : nullptr;
  return task != nullptr && task->kept;
}

std::uint32_t TasksUnderWay::kept_slot(const Kept& kept) const {
  const std::uint32_t* slot = index_.find(kept.key);
  return slot != nullptr && tasks_[*slot].kept && tasks_[*slot].kept_seq == kept.seq ? *slot : nil;
}

std::optional<ReplicaIndex> TasksUnderWay::kept_room_of(std::uint64_t tenant) const {
  for (const Kept& kept : kept_) {
    if (const std::uint32_t slot = kept_slot(kept); slot != nil && tasks_[slot].tenant == tenant) {
      return tasks_[slot].replica;
    }
  }
  return std::nullopt;
}

void TasksUnderWay::take_kept_room(std::uint64_t tenant, ReplicaIndex replica) {
  for (const Kept& kept : kept_) {
    if (const std::uint32_t slot = kept_slot(kept);
        slot != nil && tasks_[slot].tenant == tenant && tasks_[slot].replica == replica) {
      end(slot);  // its entry is stale from now on, dropped when met
      return;
    }
  }
}

void TasksUnderWay::expire(Time now, Time idle, Time room) {
  while (!kept_.empty()) {
    const std::uint32_t slot = kept_slot(kept_.front());
    if (slot != nil && now - tasks_[slot].last_seen < room) {
      break;
    }
    if (slot != nil) {
      end(slot);
    }
    kept_.pop_front();
  }
  if (!walking_) {
    if (now < next_walk_) {
      return;
    }
    next_walk_ = now + idle / 16;
    walk_cutoff_ = now - idle;
  }
  const auto silent = [&] { return list_.tail != nil && tasks_[list_.tail].last_seen <= walk_cutoff_; };
  for (std::size_t n = 0; n < expire_budget && silent(); ++n) {
    end(list_.tail);
  }
  walking_ = silent();
}

void TasksUnderWay::clear() {
  index_.clear();
  tasks_.clear();
  list_ = {};
  walking_ = false;
  kept_.clear();
  per_tenant_.clear();
  per_replica_.assign(per_replica_.size(), Load{});
}

void TasksUnderWay::remap(const ReplicaRemap& remap) {
  per_tenant_.clear();
  std::vector<Load> moved(remap.new_count);
  for (std::uint32_t slot = list_.head; slot != nil;) {
    Task& task = tasks_[slot];
    const std::uint32_t next = task.next;
    if (task.replica < remap.to.size() && remap.to[task.replica]) {
      task.replica = *remap.to[task.replica];
      ++moved[task.replica].tasks;
      moved[task.replica].tokens += task.tokens;
      ++per_tenant_[task.tenant];
    } else {
      forget(slot);
    }
    slot = next;
  }
  per_replica_ = std::move(moved);
}

}  // namespace warden::core
