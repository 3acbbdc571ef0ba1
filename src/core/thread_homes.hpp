#pragma once
// What the Router knows of threads besides each thread's home (the SessionTable keeps that, keyed by the
// thread's key; a session's main thread is keyed by the session's own key): the threads of each session
// (ThreadIndex) and where each prompt start was served (StartHomes). From them: the replicas a new
// thread prefers, and the home of a side request. Not thread-safe: the Router serialises access.

#include <optional>
#include <vector>

#include "core/session_table.hpp"
#include "core/start_homes.hpp"
#include "core/thread_index.hpp"
#include "core/types.hpp"

namespace warden::core {

/// One session with threads besides its main one, for a view: every thread's key and home (nullopt when
/// the session table no longer knows it).
struct ThreadView {
  std::uint64_t key = 0;
  std::uint64_t parent = 0;
  std::optional<ReplicaIndex> home;
  Time last_seen{};
};
struct SessionThreadsView {
  std::uint64_t session = 0;
  Time last_seen{};
  std::vector<ThreadView> threads;  // the main thread first (when the table knows it), then by recency
};

class ThreadHomes {
 public:
  explicit ThreadHomes(ThreadIndexConfig config = {}, std::size_t max_starts = 4096);

  /// The session a request's thread belongs to.
  [[nodiscard]] static std::uint64_t session_of(const RequestFacts& facts);

  /// The replicas a new thread prefers: the homes of its session's other threads, and the replicas that
  /// served its prompt start.
  [[nodiscard]] ReplicaSet preferred(const RequestFacts& facts, const SessionTable& sessions, Time now) const;

  /// Where a side request of the session goes: its main thread's home, else its most recently seen
  /// thread's.
  [[nodiscard]] std::optional<ReplicaIndex> side_home(std::uint64_t session, const SessionTable& sessions,
                                                      Time now) const;

  /// A request of the thread (not a side request) was sent to `replica`: the thread and its start are
  /// noted; threads the index forgot to make room leave `sessions` too. `stores_key`: the key its stores
  /// are named by in the engine (Decision::thread_key), the replica's witness of the start unless
  /// `keep_witness` (StartHomes::served).
  void served(const RequestFacts& facts, ReplicaIndex replica, SessionTable& sessions, Time now,
              std::uint64_t stores_key, bool keep_witness);
  /// The witnesses of the start `facts` begins with, one per replica (StartHomes::threads).
  [[nodiscard]] StartHomes::Threads start_threads(const RequestFacts& facts) const {
    return starts_.threads(facts.thread.start);
  }
  [[nodiscard]] std::uint64_t start_witness(const RequestFacts& facts, ReplicaIndex replica) const {
    return starts_.witness(facts.thread.start, replica);
  }
  /// The length of the start `facts` begins with, once events told it (StartHomes::length).
  void set_start_length(const RequestFacts& facts, std::uint64_t tokens) {
    starts_.set_length(facts.thread.start, tokens);
  }
  [[nodiscard]] std::uint64_t start_length(const RequestFacts& facts) const {
    return starts_.length(facts.thread.start);
  }

  /// Up to `limit` sessions with threads, most recently seen first, after the first `offset`.
  [[nodiscard]] std::vector<SessionThreadsView> recent(const SessionTable& sessions, std::size_t limit,
                                                       std::size_t offset, Time now) const;

  [[nodiscard]] std::size_t sessions() const { return index_.sessions(); }
  [[nodiscard]] std::size_t threads() const { return index_.threads(); }
  [[nodiscard]] std::size_t memory_bytes() const { return index_.memory_bytes(); }

 private:
  ThreadIndex index_;
  StartHomes starts_;
};

}  // namespace warden::core
