#pragma once
// The threads of each session: which threads besides the main one a session has (a Claude Code subagent,
// a Codex sub-agent), so that a new thread is placed near its siblings and a view can show a session as
// the tree it is. The main thread is the session's own key and is not stored here. Bounded twice: a
// session keeps its most recent `max_threads_per_session` threads (a client that sends a new thread id on
// every request cannot grow it), and beyond `max_sessions` the least recently seen session goes, one per
// new session (O(1): the sessions are linked most recently seen first), so no request pays for forgetting
// a crowd. What it forgets is returned, so that the caller forgets those threads' homes too.
// Not thread-safe: the Router serialises access.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "core/types.hpp"

namespace warden::core {

struct ThreadIndexConfig {
  std::size_t max_threads_per_session = 32;
  std::size_t max_sessions = 65536;
};

/// One thread of a session besides its main one.
struct ThreadRecord {
  std::uint64_t key = 0;
  std::uint64_t parent = 0;  // as the client named it (0: none)
  Time last_seen{};
};

class ThreadIndex {
 public:
  explicit ThreadIndex(ThreadIndexConfig config = {});

  /// Notes that thread `key` (not the main one) of `session` (not 0) was just seen. Returns the keys of
  /// the threads the index forgot to make room, if any: max_threads_per_session at most.
  std::vector<std::uint64_t> note(std::uint64_t session, std::uint64_t key, std::uint64_t parent, Time now);

  /// The session's threads besides the main one, in no particular order (empty if unknown).
  [[nodiscard]] std::span<const ThreadRecord> threads(std::uint64_t session) const;

  /// Sessions with at least one thread besides the main one, and those threads.
  [[nodiscard]] std::size_t sessions() const { return sessions_.size(); }
  [[nodiscard]] std::size_t threads() const { return threads_; }
  /// Up to `limit` sessions, most recently seen first, after the first `offset` of them (a page):
  /// O(offset + limit).
  [[nodiscard]] std::vector<std::uint64_t> recent(std::size_t limit, std::size_t offset = 0) const;
  [[nodiscard]] std::size_t memory_bytes() const;

 private:
  // Session 0 is none: the ends of the list.
  static constexpr std::uint64_t nil = 0;
  struct Entry {
    Time last_seen{};
    std::vector<ThreadRecord> threads;
    std::uint64_t prev = nil;  // seen more recently
    std::uint64_t next = nil;  // seen less recently
  };
  Entry& front(std::uint64_t session, std::vector<std::uint64_t>& forgotten);
  void unlink(const Entry& entry);
  void forget_oldest(std::vector<std::uint64_t>& forgotten);

  ThreadIndexConfig config_;
  boost::unordered_flat_map<std::uint64_t, Entry> sessions_;
  std::uint64_t head_ = nil;
  std::uint64_t tail_ = nil;
  std::size_t threads_ = 0;
};

}  // namespace warden::core
