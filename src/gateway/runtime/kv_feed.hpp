// One replica's KV cache events as the gateway's I/O thread keeps them: the replica's index
// (core::KvIndex, fed by core::apply_events only) and whether the Router may believe it now. The
// subscriber (gateway/subscriber/) tells it what the engine's stream did (a batch, a reset, a gap opened
// or closed, the publisher's connection); the poller's scrapes tell it whether the engine is working while
// its stream is silent. No sockets, time is a parameter.
//
// Exact (routing_index() not null) only while all of these hold: the warden listens, the publisher is
// connected, a first batch has come, no gap is being replayed, and the stream is not stale (the engine
// computed prompt tokens for stale_after with no batch: events that stopped while the engine runs).
// Otherwise the Router falls back to its own estimate for the replica.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "core/kv_apply.hpp"
#include "core/kv_index.hpp"
#include "core/types.hpp"

namespace warden::gateway {

// The upper bounds (seconds) of the lag histogram's buckets: fine around a millisecond, where an applied
// batch should be, up to the seconds a stalled I/O thread would show.
inline constexpr std::array<double, 15> kKvLagBounds{0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                                     0.05,   0.1,    0.2,    0.5,   1,     2,     5};

// What a replica's stream did since the warden started listening to it (Prometheus counters).
struct KvFeedCounts {
  std::uint64_t batches = 0;
  std::uint64_t events = 0;
  std::uint64_t stored_blocks = 0;
  std::uint64_t removed_blocks = 0;
  std::uint64_t decode_errors = 0;  // payloads or frames that did not decode: dropped
  std::uint64_t gaps = 0;           // seq jumped (joining a stream under way is not counted)
  std::uint64_t replays = 0;        // replay requests sent
  std::uint64_t clears = 0;         // the index cleared: publisher restarts and gaps no replay covered
  std::uint64_t restarts = 0;       // of those, publisher restarts
  std::uint64_t fallbacks = 0;      // times the replica stopped being exact
  double lag_sum = 0;               // seconds from a batch's ts to its application, summed
  std::uint64_t lag_count = 0;
  double lag_last = 0;
  // Lags per bucket of kKvLagBounds (the last: past the largest bound), not cumulative.
  std::array<std::uint64_t, kKvLagBounds.size() + 1> lag_buckets{};
};

class KvFeed {
 public:
  // Listening starts (at start, or a reload gave the replica another publisher): an empty index, not
  // exact until a first batch. `stale_after`: see above.
  void listen(std::chrono::milliseconds stale_after);
  void stop_listening();
  bool listening() const { return index_ != nullptr; }

  // The publisher's connection came up or went down (a dead publisher falls back at once).
  void set_connected(bool connected);
  // The index cleared: `complete` = it now knows every block the engine holds (a publisher that started
  // from seq 0); false after a gap no replay could cover (blocks stored before it are unknown).
  // The index cleared as a publisher restart (else a lost gap) says. True if it held what an earlier
  // batch told (counted as a clear), false for the stream's first reset.
  bool reset(bool complete, bool restart);
  // A gap in the sequence is being replayed (open) or is over (closed, replayed or reset). `counted`:
  // a real gap (not a late join); `replay`: a replay was asked.
  void set_gap(bool open, bool counted = false, bool replay = false);
  void decode_error() { ++counts_.decode_errors; }
  // `now_unix`: the wall clock in seconds, against the batch's ts (the engine's clock) for the lag.
  core::KvApplied apply(const protocol::kv::EventBatch& batch, core::Time now, double now_unix);

  // The engine's computed prompt tokens (prefix queries - hits, since the warden started), at a scrape:
  // a few blocks' worth (the events' own block size) computed with no batch for stale_after is stale.
  void observe_computed(double computed_tokens, core::Time now);

  // A request of `thread` is on its way to the replica (core::KvIndex::sent: how much of its chain the
  // thread's requests reuse is learned from where it parts).
  void sent(std::uint64_t thread, bool anew) {
    if (index_ != nullptr && thread != 0) {
      index_->sent(thread, anew);
    }
  }
  bool exact() const;
  // What the Router reads (core::ReplicaMetrics::kv): the index while exact, else null.
  const core::KvIndex* routing_index() const { return exact() ? index_.get() : nullptr; }
  const core::KvIndex* index() const { return index_.get(); }
  bool connected() const { return connected_; }
  bool started() const { return started_; }
  bool gap_open() const { return gap_; }
  bool stale() const { return stale_; }
  const KvFeedCounts& counts() const { return counts_; }
  // Seconds since the last batch (nullopt: none yet).
  std::optional<double> idle_seconds(core::Time now) const;

 private:
  // Shared so that ReplicaRuntime stays copyable (a reload's remap copies a fresh one, which holds none).
  std::shared_ptr<core::KvIndex> index_;
  std::chrono::milliseconds stale_after_{5000};
  bool connected_ = false;
  bool started_ = false;
  bool gap_ = false;
  bool stale_ = false;
  core::Time last_batch_{};
  double computed_now_ = 0;
  double computed_at_batch_ = 0;
  bool was_exact_ = false;
  KvFeedCounts counts_;

  void note_exact();  // counts a fallback when the replica stops being exact
};

}  // namespace warden::gateway
