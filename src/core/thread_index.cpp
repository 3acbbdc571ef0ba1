#include "core/thread_index.hpp"

#include <algorithm>

namespace warden::core {

ThreadIndex::ThreadIndex(ThreadIndexConfig config) : config_(config) {
  config_.max_threads_per_session = std::max<std::size_t>(1, config_.max_threads_per_session);
  config_.max_sessions = std::max<std::size_t>(1, config_.max_sessions);
}

std::vector<std::uint64_t> ThreadIndex::note(std::uint64_t session, std::uint64_t key, std::uint64_t parent,
                                             Time now) {
  std::vector<std::uint64_t> forgotten;
  if (session == nil) {
    return forgotten;
  }
  Entry& entry = front(session, forgotten);
  entry.last_seen = std::max(entry.last_seen, now);
  auto& threads = entry.threads;
  const auto it = std::find_if(threads.begin(), threads.end(), [&](const auto& t) { return t.key == key; });
  if (it != threads.end()) {
    it->last_seen = std::max(it->last_seen, now);
    it->parent = parent != 0 ? parent : it->parent;
    return forgotten;
  }
  if (threads.size() >= config_.max_threads_per_session) {
    // The least recently seen thread goes: a long-finished subagent, or the previous of a client's
    // throwaway ids.
    const auto oldest = std::min_element(threads.begin(), threads.end(), [](const auto& a, const auto& b) {
      return a.last_seen < b.last_seen;
    });
    forgotten.push_back(oldest->key);
    *oldest = threads.back();
    threads.pop_back();
    --threads_;
  }
  threads.push_back({key, parent, now});
  ++threads_;
  return forgotten;
}

// The session's entry, first in the list (a new one in the place of the least recently seen session when
// the index is full).
ThreadIndex::Entry& ThreadIndex::front(std::uint64_t session, std::vector<std::uint64_t>& forgotten) {
  if (const auto it = sessions_.find(session); it != sessions_.end()) {
    if (head_ == session) {
      return it->second;
    }
    unlink(it->second);
  } else if (sessions_.size() >= config_.max_sessions) {
    forget_oldest(forgotten);
  }
  Entry& entry = sessions_[session];  // the last lookup: a new entry may move the others
  entry.prev = nil;
  entry.next = head_;
  (head_ != nil ? sessions_.find(head_)->second.prev : tail_) = session;
  head_ = session;
  return entry;
}

void ThreadIndex::unlink(const Entry& entry) {
  (entry.prev != nil ? sessions_.find(entry.prev)->second.next : head_) = entry.next;
  (entry.next != nil ? sessions_.find(entry.next)->second.prev : tail_) = entry.prev;
}

// Forgets the least recently seen session and its threads: max_threads_per_session keys at most.
void ThreadIndex::forget_oldest(std::vector<std::uint64_t>& forgotten) {
  const auto it = sessions_.find(tail_);
  unlink(it->second);
  for (const ThreadRecord& t : it->second.threads) {
    forgotten.push_back(t.key);
  }
  threads_ -= it->second.threads.size();
  sessions_.erase(it);
}

// The list is most recently seen first already: a page walks `offset + limit` of it, no sort of them all.
std::vector<std::uint64_t> ThreadIndex::recent(std::size_t limit, std::size_t offset) const {
  std::vector<std::uint64_t> out;
  out.reserve(std::min(limit, sessions_.size()));
  std::uint64_t session = head_;
  for (std::size_t i = 0; session != nil && out.size() < limit; ++i) {
    if (i >= offset) {
      out.push_back(session);
    }
    session = sessions_.find(session)->second.next;
  }
  return out;
}

std::span<const ThreadRecord> ThreadIndex::threads(std::uint64_t session) const {
  const auto it = sessions_.find(session);
  return it == sessions_.end() ? std::span<const ThreadRecord>{} : std::span(it->second.threads);
}

std::size_t ThreadIndex::memory_bytes() const {
  std::size_t bytes =
      sizeof(*this) + sessions_.bucket_count() * (sizeof(std::pair<std::uint64_t, Entry>) + 1);
  for (const auto& [session, entry] : sessions_) {
    bytes += entry.threads.capacity() * sizeof(ThreadRecord);
  }
  return bytes;
}

}  // namespace warden::core
