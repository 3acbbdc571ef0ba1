#pragma once
// Where each prompt start was served: a bounded table from a digest of the prompt's start (the request's
// system prompt and tools, as protocol::prompt_start() takes them) to the replicas that ran a request
// starting that way, and so hold that prefix in their cache. A new conversation of the same project, or a
// new subagent of a type that ran before, starts the same way: it prefers those replicas when the load
// allows (decide.hpp). Beyond `max_entries` the least recently served start goes, one for each new one
// (a recency list: no request pays for a walk over the table).
// Not thread-safe: the Router serialises access.

#include <array>
#include <cstddef>
#include <cstdint>

#include <boost/unordered/unordered_flat_map.hpp>

#include "core/slab.hpp"
#include "core/types.hpp"

namespace warden::core {

class StartHomes {
 public:
  explicit StartHomes(std::size_t max_entries = 4096);

  /// A request of `thread` starting with `start` was just sent to `replica`. A zero digest (no start) is
  /// ignored. `thread` becomes the replica's witness of the start (threads()) unless `keep` says the one it
  /// has is still good.
  void served(std::uint64_t start, ReplicaIndex replica, std::uint64_t thread = 0, bool keep = false);
  /// The thread noted for `start` on `replica` (0 = none).
  [[nodiscard]] std::uint64_t witness(std::uint64_t start, ReplicaIndex replica) const;
  /// The start's length in tokens once a replica's events told it (0 = not yet): it outlives the threads
  /// that told it.
  void set_length(std::uint64_t start, std::uint64_t tokens);
  [[nodiscard]] std::uint64_t length(std::uint64_t start) const;
  /// The replicas that served `start` (empty if none, or unknown).
  [[nodiscard]] ReplicaSet find(std::uint64_t start) const;
  /// The witness of `start` on each of up to `threads_kept` replicas (0 = none): a thread that started with
  /// it there, kept while it still holds the whole start (served()'s `keep`). With KV cache events, what a
  /// replica holds of that thread's start is what a new thread of the same start finds there.
  static constexpr std::size_t threads_kept = 8;
  using Threads = std::array<std::uint64_t, threads_kept>;
  [[nodiscard]] Threads threads(std::uint64_t start) const;

  [[nodiscard]] std::size_t size() const { return slots_.size(); }

 private:
  static constexpr std::uint32_t nil = SlabList::nil;
  struct Served {
    std::uint64_t start = 0;
    ReplicaSet replicas = 0;
    Threads threads{};  // a ring, newest at `ring - 1`; one per replica, on `on[i]`
    std::array<ReplicaIndex, threads_kept> on{};
    std::uint8_t ring = 0;
    std::uint64_t tokens = 0;  // set_length()
    std::uint32_t prev = nil;  // served more recently
    std::uint32_t next = nil;  // served less recently
  };
  [[nodiscard]] const Served* find_served(std::uint64_t start) const;
  // The start's entry, first in the recency list; a new one takes the least recently served one's place
  // when the table is full.
  Served& touch(std::uint64_t start);

  std::size_t max_entries_;
  boost::unordered_flat_map<std::uint64_t, std::uint32_t> slots_;  // start -> slot
  Slab<Served> nodes_;
  SlabList recency_;
};

}  // namespace warden::core
