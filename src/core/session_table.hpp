#pragma once
// The conversation → home replica table. Bounded (entry count + idle TTL, LRU eviction), time passed in,
// and keeping per-replica aggregates (active conversations, tokens they hold) current in O(1) amortised.
// Not thread-safe: one per Router, on one thread (docs/architecture.md, "Threads").

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <boost/unordered/unordered_flat_set.hpp>

#include "core/slab.hpp"
#include "core/slot_index.hpp"
#include "core/types.hpp"

namespace warden::core {

struct SessionTableConfig {
  /// Maximum number of remembered conversations; the least recently seen is evicted beyond it.
  std::size_t max_entries = 1'000'000;
  /// A conversation not seen for this long is forgotten.
  Time idle_ttl = std::chrono::minutes(30);
  /// A conversation seen within this window counts as active on its home replica (the upper bound when
  /// the window adapts, below).
  Time active_window = std::chrono::minutes(5);
  /// Adaptive window: once conversations have come back for a next turn, the window is this many typical
  /// turn gaps (a running average of the gaps between a conversation's consecutive requests, ignoring
  /// gaps under a second, which are parallel requests of one turn), clamped to
  /// [min_active_window, active_window]. A conversation that stays away several typical gaps has most
  /// likely ended, and must stop making its home look busy long before 5 minutes. 0 = fixed window.
  double adaptive_gap_factor = 3.0;
  Time min_active_window = std::chrono::seconds(10);
};

/// What the table knows about one conversation.
struct SessionEntry {
  static constexpr std::uint64_t unknown = ~std::uint64_t{0};
  ReplicaIndex home = 0;
  std::uint32_t prompt_tokens = 0;
  Time last_seen{};
  /// The home's count of prompt tokens computed (vLLM's prefix-cache queries minus hits) just after this
  /// conversation's last turn there was prefilled, as the Router estimated it; `unknown` if never marked.
  std::uint64_t home_computed_at = unknown;
};

/// One conversation as exported or imported (a state kept across restarts by the caller).
struct SessionRecord {
  std::uint64_t key = 0;
  SessionEntry entry;
};

/// What changed since the last take_changes(): the current entries of conversations assigned or touched,
/// and the keys the table forgot (evicted, expired or erased).
struct SessionChanges {
  std::vector<SessionRecord> changed;
  std::vector<std::uint64_t> removed;
};

/// Per-replica aggregates over the *active* conversations (seen within the active window).
struct ReplicaSessions {
  std::uint32_t active_conversations = 0;
  std::uint64_t held_tokens = 0;
};

class SessionTable {
 public:
  /// Homes at or above this index are remembered but not aggregated (a guard against a bogus index).
  static constexpr ReplicaIndex max_tracked_replicas = 65536;

  explicit SessionTable(SessionTableConfig config = {});

  /// The conversation's entry, or nullopt if unknown or idle longer than the TTL (even if expire() has not
  /// run yet). Does not refresh it.
  [[nodiscard]] std::optional<SessionEntry> lookup(std::uint64_t key, Time now) const;

  /// Records that the conversation was just seen with home `home` and a prompt of `prompt_tokens`
  /// (inserting it, moving it to another home, or refreshing it). Evicts the least recently seen entry when
  /// full. `now` earlier than a time already seen is treated as that time (a stamp taken before a wait may
  /// arrive after a later one); the table stays ordered.
  void assign(std::uint64_t key, ReplicaIndex home, std::uint32_t prompt_tokens, Time now);

  /// Refreshes last_seen and the prompt size but keeps the home (a spilled or pinned request). No-op if
  /// the key is unknown.
  void touch(std::uint64_t key, std::uint32_t prompt_tokens, Time now);

  /// Sets the entry's home_computed_at (no-op if the key is unknown). assign() keeps it while the home stays
  /// and resets it to unknown when the home changes.
  void mark_computed(std::uint64_t key, std::uint64_t computed_at);

  /// Inserts a conversation this table does not know as seen now with home `home` (another warden's
  /// conversation, looked up before its first request here): O(1), not reported as a change, and a no-op
  /// for a key already known (a home placed here meanwhile stays). Returns whether it was inserted.
  bool learn(std::uint64_t key, ReplicaIndex home, std::uint32_t prompt_tokens, Time now);

  /// Another warden has had this conversation's latest turn (several wardens sharing homes): the entry is
  /// refreshed as seen now, takes the newer of both computed marks, and leaves the aggregates, since that
  /// warden's load counts it; this table's next turn of it (assign, touch) counts it here again. No-op
  /// (false) unless known with home `home`; not reported as a change.
  bool seen_elsewhere(std::uint64_t key, ReplicaIndex home, std::uint64_t computed_at, Time now);

  /// A reload relaid the model's replicas: every home moves to where its replica is now (`to`, one entry
  /// per old replica), a home on a removed replica becomes `gone` (never a replica: the conversation's
  /// next turn is a failover). Moved homes are reported as changes. O(size).
  void remap_homes(std::span<const std::optional<ReplicaIndex>> to, ReplicaIndex gone);

  /// The conversation has ended for now (a subagent gave its final answer): it keeps its home, but counts
  /// as active there no longer, until it is seen again (assign, touch). Returns whether it counted.
  bool end(std::uint64_t key);

  /// Forgets one conversation. Returns whether it was known.
  bool erase(std::uint64_t key);

  /// Moves conversations out of the active window (updating aggregates) and drops those idle beyond the
  /// TTL, at most `expire_budget` of them per call, the least recently seen first: a crowd of conversations
  /// that went idle together (a flood of new ids, a million of them) leaves over many calls instead of
  /// stalling one request. Returns false when it stopped at the budget with more left to do at `now`.
  /// Call it before reading aggregates (they may lag by what is left); lookups and inserts treat an entry
  /// idle beyond the TTL as gone whether or not it was dropped yet.
  bool expire(Time now);
  /// Entries expire() moves or drops per call at most. Each request adds one entry at most, so the calls
  /// of the requests alone (one each) keep up with any rate and catch up with a backlog.
  static constexpr std::size_t expire_budget = 256;

  /// Aggregates for one replica (zero for a replica never seen).
  [[nodiscard]] ReplicaSessions replica(ReplicaIndex index) const;
  /// Aggregates for replicas 0..count-1.
  [[nodiscard]] std::vector<ReplicaSessions> replicas(std::size_t count) const;

  [[nodiscard]] std::size_t size() const { return index_.size(); }
  [[nodiscard]] std::size_t active_size() const { return active_count_; }
  /// The active window in force (adaptive, see SessionTableConfig) and the typical turn gap behind it
  /// (zero before any conversation came back).
  [[nodiscard]] Time active_window() const;
  [[nodiscard]] Time typical_gap() const { return typical_gap_; }
  [[nodiscard]] const SessionTableConfig& config() const { return config_; }
  /// Changes limits; shrinking max_entries evicts immediately.
  void reconfigure(const SessionTableConfig& config);

  /// Every conversation still within the TTL at `now`, least recently seen first.
  [[nodiscard]] std::vector<SessionRecord> export_entries(Time now) const;
  /// Puts back exported entries (at start, from what a previous run kept): those idle beyond the TTL at
  /// `now` are skipped, a key the table already knows keeps its live entry, and beyond max_entries the
  /// least recently seen go. O(size) (the table is rebuilt in time order). Imported entries are not
  /// reported as changes; evictions they cause are.
  void import_entries(std::span<const SessionRecord> entries, Time now);
  /// Starts (or stops) recording changes for take_changes(); off by default, so a caller that never
  /// takes them does not pay for the record.
  void track_changes(bool on);
  /// The changes recorded since the last call, and a fresh record.
  [[nodiscard]] SessionChanges take_changes();

  /// Bytes currently reserved by the table (slab + hash index + aggregates), for memory accounting.
  [[nodiscard]] std::size_t memory_bytes() const;

 private:
  static constexpr std::uint32_t nil = 0xFFFFFFFFu;

  // Slab node; prev/next link it into either the active list or the idle list (both most recent first).
  struct Node {
    std::uint64_t key = 0;
    Time last_seen{};
    std::uint32_t prompt_tokens = 0;
    std::uint32_t home = 0;
    std::uint64_t computed_at = SessionEntry::unknown;
    std::uint32_t prev = nil;
    std::uint32_t next = nil;
    bool active = false;
    bool here = true;    // counted in the aggregates (false: another warden had its latest turn)
    bool ended = false;  // not counted either: it ended for now (end())

    // Whether the node, when active, is in its home's aggregates: a real replica index (a bogus one must
    // never size the aggregate vector), this warden's turn (not another's), and not ended for now.
    [[nodiscard]] bool counted() const { return home < max_tracked_replicas && here && !ended; }
  };
  struct List {
    std::uint32_t head = nil;
    std::uint32_t tail = nil;
  };

  void unlink(std::uint32_t slot);
  void push_front(List& list, std::uint32_t slot);
  void push_back(List& list, std::uint32_t slot);
  void observe_gap(Time gap);
  void activate(Node& node);
  void deactivate(Node& node);
  void remove(std::uint32_t slot);
  std::uint32_t* live(std::uint64_t key, Time now);
  void evict_to(std::size_t limit);
  void place(std::uint64_t key, ReplicaIndex home, std::uint32_t prompt_tokens, Time seen, bool here = true);
  ReplicaSessions& aggregate(ReplicaIndex index);
  Time stamp(Time now);

  SessionTableConfig config_;
  SlotIndex index_;
  Slab<Node> nodes_;
  List active_;
  List idle_;
  std::size_t active_count_ = 0;
  std::vector<ReplicaSessions> per_replica_;
  Time latest_{};
  Time typical_gap_{};
  bool tracking_ = false;
  boost::unordered_flat_set<std::uint64_t> changed_;
  boost::unordered_flat_set<std::uint64_t> removed_;
};

}  // namespace warden::core
