#include "core/session_table.hpp"

#include <algorithm>

namespace warden::core {

SessionTable::SessionTable(SessionTableConfig config) : config_(config) {
  config_.max_entries = std::max<std::size_t>(1, config_.max_entries);
}

std::optional<SessionEntry> SessionTable::lookup(std::uint64_t key, Time now) const {
  const std::uint32_t* slot = index_.find(key);
  if (slot == nullptr) {
    return std::nullopt;
  }
  const Node& node = nodes_[*slot];
  if (now - node.last_seen > config_.idle_ttl) {
    return std::nullopt;
  }
  return SessionEntry{node.home, node.prompt_tokens, node.last_seen, node.computed_at};
}

Time SessionTable::stamp(Time now) {
  latest_ = std::max(latest_, now);
  return latest_;
}

ReplicaSessions& SessionTable::aggregate(ReplicaIndex index) {
  if (index >= per_replica_.size()) {
    per_replica_.resize(static_cast<std::size_t>(index) + 1);
  }
  return per_replica_[index];
}

void SessionTable::activate(Node& node) {
  node.active = true;
  ++active_count_;
  if (!node.counted()) {
    return;
  }
  auto& agg = aggregate(node.home);
  ++agg.active_conversations;
  agg.held_tokens += node.prompt_tokens;
}

void SessionTable::deactivate(Node& node) {
  node.active = false;
  --active_count_;
  if (!node.counted()) {
    return;
  }
  auto& agg = aggregate(node.home);
  --agg.active_conversations;
  agg.held_tokens -= node.prompt_tokens;
}

void SessionTable::unlink(std::uint32_t slot) {
  Node& node = nodes_[slot];
  List& list = node.active ? active_ : idle_;
  if (node.prev != nil) {
    nodes_[node.prev].next = node.next;
  } else {
    list.head = node.next;
  }
  if (node.next != nil) {
    nodes_[node.next].prev = node.prev;
  } else {
    list.tail = node.prev;
  }
  node.prev = nil;
  node.next = nil;
}

void SessionTable::push_front(List& list, std::uint32_t slot) {
  Node& node = nodes_[slot];
  node.prev = nil;
  node.next = list.head;
  if (list.head != nil) {
    nodes_[list.head].prev = slot;
  } else {
    list.tail = slot;
  }
  list.head = slot;
}

void SessionTable::push_back(List& list, std::uint32_t slot) {
  Node& node = nodes_[slot];
  node.next = nil;
  node.prev = list.tail;
  if (list.tail != nil) {
    nodes_[list.tail].next = slot;
  } else {
    list.head = slot;
  }
  list.tail = slot;
}

void SessionTable::observe_gap(Time gap) {
  // Requests less than a second apart are parallel requests of one turn (tool calls, a title request),
  // not a turn gap.
  if (gap < std::chrono::seconds(1)) {
    return;
  }
  // One very late return (a user back from lunch) must not stretch the window: cap the sample.
  gap = std::clamp(gap, Time::zero(), config_.active_window);
  // Exponential average over roughly the last 8 returns: follows the load (turns slow down as it rises).
  typical_gap_ = typical_gap_ == Time::zero() ? gap : typical_gap_ + (gap - typical_gap_) / 8;
}

Time SessionTable::active_window() const {
  const Time cap = std::min(config_.active_window, config_.idle_ttl);
  const double factor = config_.adaptive_gap_factor;
  if (factor <= 0.0 || typical_gap_ <= Time::zero()) {
    return cap;
  }
  const auto scaled = std::chrono::duration_cast<Time>(
      std::chrono::duration<double, Time::period>(factor * typical_gap_.count()));
  return std::clamp(scaled, std::min(config_.min_active_window, cap), cap);
}

void SessionTable::remove(std::uint32_t slot) {
  Node& node = nodes_[slot];
  unlink(slot);
  if (node.active) {
    deactivate(node);
  }
  index_.erase(node.key);
  if (tracking_) {
    changed_.erase(node.key);
    removed_.insert(node.key);
  }
  nodes_.release(slot);
}

// The slot of a conversation still within the TTL at `now`; one idle beyond it that expire() has not
// dropped yet is dropped here, as if it had been.
std::uint32_t* SessionTable::live(std::uint64_t key, Time now) {
  std::uint32_t* slot = index_.find(key);
  if (slot == nullptr || std::max(now, latest_) - nodes_[*slot].last_seen <= config_.idle_ttl) {
    return slot;
  }
  remove(*slot);
  return nullptr;
}

void SessionTable::remap_homes(std::span<const std::optional<ReplicaIndex>> to, ReplicaIndex gone) {
  for (std::uint32_t slot = 0; slot < nodes_.size(); ++slot) {
    Node& node = nodes_[slot];
    const std::uint32_t* found = index_.find(node.key);
    if (found == nullptr || *found != slot) {
      continue;  // a free slot
    }
    // A home beyond the old replicas was no replica then: it must not become one of the new ones.
    const ReplicaIndex home = node.home < to.size() ? to[node.home].value_or(gone) : gone;
    if (home == node.home) {
      continue;
    }
    const bool active = node.active;
    if (active) {
      deactivate(node);
    }
    node.home = home;
    if (home == gone) {
      node.computed_at = SessionEntry::unknown;  // the mark of a replica that is no longer there
    }
    if (active) {
      activate(node);
    }
    if (tracking_) {
      changed_.insert(node.key);
    }
  }
}

void SessionTable::evict_to(std::size_t limit) {
  while (index_.size() > limit) {
    // Idle conversations go first; both lists are most-recent-first, so the tail is the LRU entry.
    remove(idle_.tail != nil ? idle_.tail : active_.tail);
  }
}

void SessionTable::assign(std::uint64_t key, ReplicaIndex home, std::uint32_t prompt_tokens, Time now) {
  place(key, home, prompt_tokens, stamp(now));
  if (tracking_) {
    removed_.erase(key);
    changed_.insert(key);
  }
}

// Inserts, moves or refreshes the entry as seen at `seen` (not before any entry in the table).
void SessionTable::place(std::uint64_t key, ReplicaIndex home, std::uint32_t prompt_tokens, Time seen,
                         bool here) {
  std::uint32_t slot = nil;
  if (const std::uint32_t* found = live(key, seen); found != nullptr) {
    slot = *found;
    observe_gap(seen - nodes_[slot].last_seen);
    unlink(slot);
    if (nodes_[slot].active) {
      deactivate(nodes_[slot]);
    }
  } else {
    evict_to(config_.max_entries - 1);
    slot = nodes_.take();
    index_.insert(key, slot);
    nodes_[slot].computed_at = SessionEntry::unknown;
  }
  Node& node = nodes_[slot];
  if (node.home != home) {
    node.computed_at = SessionEntry::unknown;
  }
  node.key = key;
  node.home = home;
  node.prompt_tokens = prompt_tokens;
  node.last_seen = seen;
  node.here = here;
  node.ended = false;
  activate(node);
  push_front(active_, slot);
}

void SessionTable::touch(std::uint64_t key, std::uint32_t prompt_tokens, Time now) {
  const std::uint32_t* slot = live(key, now);
  if (slot == nullptr) {
    return;
  }
  assign(key, nodes_[*slot].home, prompt_tokens, now);
}

void SessionTable::mark_computed(std::uint64_t key, std::uint64_t computed_at) {
  if (const std::uint32_t* slot = index_.find(key); slot != nullptr) {
    nodes_[*slot].computed_at = computed_at;
  }
}

bool SessionTable::learn(std::uint64_t key, ReplicaIndex home, std::uint32_t prompt_tokens, Time now) {
  if (live(key, now) != nullptr) {
    return false;
  }
  place(key, home, prompt_tokens, stamp(now));
  return true;
}

bool SessionTable::seen_elsewhere(std::uint64_t key, ReplicaIndex home, std::uint64_t computed_at, Time now) {
  const std::uint32_t* slot = live(key, now);
  if (slot == nullptr || nodes_[*slot].home != home) {
    return false;
  }
  Node& node = nodes_[*slot];
  place(key, home, node.prompt_tokens, stamp(now), false);  // the same home: the mark stays
  if (computed_at != SessionEntry::unknown &&
      (node.computed_at == SessionEntry::unknown || computed_at > node.computed_at)) {
    node.computed_at = computed_at;
  }
  return true;
}

bool SessionTable::end(std::uint64_t key) {
  const std::uint32_t* slot = index_.find(key);
  if (slot == nullptr) {
    return false;
  }
  Node& node = nodes_[*slot];
  if (!node.active || !node.counted()) {
    node.ended = true;
    return false;
  }
  auto& agg = aggregate(node.home);
  --agg.active_conversations;
  agg.held_tokens -= node.prompt_tokens;
  node.ended = true;
  return true;
}

bool SessionTable::erase(std::uint64_t key) {
  const std::uint32_t* slot = index_.find(key);
  if (slot == nullptr) {
    return false;
  }
  remove(*slot);
  return true;
}

bool SessionTable::expire(Time now) {
  // Active if seen within the window (and never longer than the TTL allows).
  const Time active_cutoff = now - active_window();
  const Time ttl_cutoff = now - config_.idle_ttl;
  const auto back_in_window = [&] {
    return idle_.head != nil && nodes_[idle_.head].last_seen >= active_cutoff;
  };
  const auto out_of_window = [&] {
    return active_.tail != nil && nodes_[active_.tail].last_seen < active_cutoff;
  };
  const auto past_ttl = [&] { return idle_.tail != nil && nodes_[idle_.tail].last_seen < ttl_cutoff; };
  std::size_t budget = expire_budget;
  // The adaptive window may have grown since the last call: the most recent idle entries come back. Both
  // lists are ordered, and every idle entry is older than every active one, so they join at the tail.
  for (; budget > 0 && back_in_window(); --budget) {
    const std::uint32_t slot = idle_.head;
    unlink(slot);
    activate(nodes_[slot]);
    push_back(active_, slot);
  }
  for (; budget > 0 && out_of_window(); --budget) {
    const std::uint32_t slot = active_.tail;
    unlink(slot);
    deactivate(nodes_[slot]);
    // Everything already idle is older, so the idle list stays most-recent-first.
    push_front(idle_, slot);
  }
  for (; budget > 0 && past_ttl(); --budget) {
    remove(idle_.tail);
  }
  return !back_in_window() && !out_of_window() && !past_ttl();
}

ReplicaSessions SessionTable::replica(ReplicaIndex index) const {
  return index < per_replica_.size() ? per_replica_[index] : ReplicaSessions{};
}

std::vector<ReplicaSessions> SessionTable::replicas(std::size_t count) const {
  std::vector<ReplicaSessions> out(count);
  std::copy_n(per_replica_.begin(), std::min(count, per_replica_.size()), out.begin());
  return out;
}

void SessionTable::reconfigure(const SessionTableConfig& config) {
  config_ = config;
  config_.max_entries = std::max<std::size_t>(1, config_.max_entries);
  evict_to(config_.max_entries);
}

std::vector<SessionRecord> SessionTable::export_entries(Time now) const {
  std::vector<SessionRecord> out;
  out.reserve(index_.size());
  // Idle entries are older than active ones, and both lists are most recent first: walk them backwards.
  for (const List* list : {&idle_, &active_}) {
    for (std::uint32_t slot = list->tail; slot != nil; slot = nodes_[slot].prev) {
      const Node& node = nodes_[slot];
      if (now - node.last_seen <= config_.idle_ttl) {
        out.push_back({node.key, {node.home, node.prompt_tokens, node.last_seen, node.computed_at}});
      }
    }
  }
  return out;
}

void SessionTable::import_entries(std::span<const SessionRecord> entries, Time now) {
  // The table is rebuilt from its own live entries and the imported ones, oldest first, so that every
  // insert is the most recent one and both lists stay ordered whatever the mix of times.
  std::vector<SessionRecord> all = export_entries(now);
  for (const SessionRecord& r : entries) {
    if (now - r.entry.last_seen <= config_.idle_ttl && !index_.contains(r.key)) {
      all.push_back(r);
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const SessionRecord& a, const SessionRecord& b) {
    return a.entry.last_seen < b.entry.last_seen;
  });
  index_.clear();
  nodes_.clear();
  active_ = {};
  idle_ = {};
  active_count_ = 0;
  per_replica_.clear();
  latest_ = Time{};
  for (const SessionRecord& r : all) {
    place(r.key, r.entry.home, r.entry.prompt_tokens, stamp(r.entry.last_seen));  // a later duplicate wins
    nodes_[*index_.find(r.key)].computed_at = r.entry.home_computed_at;
  }
  while (!expire(now)) {
    // O(size) already: the whole window at once
  }
}

void SessionTable::track_changes(bool on) {
  tracking_ = on;
  if (!on) {
    changed_.clear();
    removed_.clear();
  }
}

SessionChanges SessionTable::take_changes() {
  SessionChanges out;
  out.changed.reserve(changed_.size());
  for (const std::uint64_t key : changed_) {
    const std::uint32_t* slot = index_.find(key);
    if (slot == nullptr) {
      out.removed.push_back(key);  // dropped by an import's rebuild (past the TTL)
      continue;
    }
    const Node& node = nodes_[*slot];
    out.changed.push_back({key, {node.home, node.prompt_tokens, node.last_seen, node.computed_at}});
  }
  out.removed.insert(out.removed.end(), removed_.begin(), removed_.end());
  changed_.clear();
  removed_.clear();
  return out;
}

std::size_t SessionTable::memory_bytes() const {
  const std::size_t change_bytes =
      (changed_.bucket_count() + removed_.bucket_count()) * (sizeof(std::uint64_t) + 1);
  return sizeof(*this) + nodes_.memory_bytes() + per_replica_.capacity() * sizeof(ReplicaSessions) +
         index_.memory_bytes() + change_bytes;
}

}  // namespace warden::core
