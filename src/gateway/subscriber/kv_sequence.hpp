// One publisher's sequence numbers, followed: what the subscriber's ZMQ thread makes of each message of a
// replica's KV cache event stream (vLLM's ZmqEventPublisher: seq from 0 per publisher, back to 0 when the
// engine restarts, a replay socket that answers the batches it still buffers). No sockets and no clock:
// the thread feeds it messages and the time, and carries out what it asks (a replay request), so every
// rule is unit-tested (tests/gateway/subscriber/).
//
// The rules, in the order the index sees them (KvStep):
// - the first batch with seq 0: a fresh engine, the index cleared and complete;
// - a first batch with seq > 0 (the warden joined late), or a gap (seq past the next expected): the
//   missing batches are asked from the replay socket and the live ones kept meanwhile (the gap is open:
//   the replica falls back); answered from where they were missing, the index is whole again; a replay
//   that starts later than asked, skips, times out or is not possible (no replay endpoint) loses blocks
//   that were stored or removed in the hole: the index is cleared and incomplete, and what came after
//   is applied;
// - seq back to 0 (the publisher restarted): cleared and complete (the engine starts empty); back to
//   another seq (it restarted and its first batches were lost): cleared and replayed from 0;
// - the connection up before any batch: the start is asked from the replay socket, as for a late join;
//   answered with nothing at all, the engine has published nothing since it started: its cache is empty,
//   the index cleared and complete (an engine whose buffer_steps is 0 would read the same: give it some);
// - a payload that does not decode is counted and dropped (its seq still counts: asking it again would
//   get the same bytes).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/result.hpp"
#include "protocol/kv_events.hpp"

namespace warden::gateway {

// What the index of the stream's replica is to do, in order.
struct KvApplyStep {
  std::int64_t seq = 0;
  protocol::kv::EventBatch batch;
  bool replayed = false;
};
struct KvResetStep {
  bool complete = false;  // a fresh engine (seq 0 seen); false: blocks stored before are unknown
  bool restart = false;   // the publisher restarted (seq went back), else a gap was lost
};
struct KvGapStep {
  bool open = false;    // the replica falls back until the matching close
  bool join = false;    // not a gap: the warden joined a stream under way and asks its start
  bool replay = false;  // a replay was asked (else none is possible: the gap is lost at once)
};
struct KvDecodeErrorStep {
  std::string why;
};
using KvStep = std::variant<KvApplyStep, KvResetStep, KvGapStep, KvDecodeErrorStep>;

// A batch as the ZMQ thread hands it over: its seq and the decoded payload (or why it did not decode).
struct KvMessage {
  std::int64_t seq = 0;
  base::Result<protocol::kv::EventBatch> batch;
};

class KvSequence {
 public:
  using Clock = std::chrono::steady_clock;
  struct Out {
    std::vector<KvStep> steps;
    std::optional<std::int64_t> replay_from;  // send a replay request from this seq
    bool replay_abandoned = false;            // the replay socket's late answers are stale: reopen it
  };

  // `can_replay`: a replay endpoint is configured. `max_pending`: live batches kept while a replay runs
  // (past it the replay is abandoned as lost).
  KvSequence(bool can_replay, std::chrono::milliseconds replay_timeout, std::size_t max_pending = 100'000);

  // A batch from the SUB socket.
  void live(KvMessage message, Clock::time_point now, Out& out);
  // An answer of the replay socket: a batch.
  void replayed(KvMessage message, Out& out);
  // The replay socket's end of its answers (seq -1).
  void replay_ended(Out& out);
  // The publisher's connection came up. Before any batch, the start is asked at once (a replay from 0):
  // a subscription misses what is published before it reaches the publisher, and an engine that stored
  // once and then idles would publish nothing more to reveal the gap.
  void connected(Clock::time_point now, Out& out);
  // A replay that has not ended by its deadline is judged lost.
  void tick(Clock::time_point now, Out& out);

  bool replaying() const { return replaying_; }
  std::optional<std::int64_t> expected() const { return expected_; }

 private:
  void start_replay(std::int64_t from, Clock::time_point now, Out& out);
  void finish_replay(Out& out);
  // Applies `m` as the batch at `expected_` (or after a hole, cleared first).
  void take(KvMessage m, bool replayed, Out& out);

  bool can_replay_;
  std::chrono::milliseconds replay_timeout_;
  std::size_t max_pending_;
  std::optional<std::int64_t> expected_;  // the next seq; nullopt before the first batch
  bool replaying_ = false;
  // The index must be cleared before the next batch it takes (restart: the publisher restarted); that
  // batch at seq 0 makes it complete again.
  std::optional<bool> reset_due_;
  bool gap_open_ = false;
  Clock::time_point deadline_{};
  std::deque<KvMessage> pending_;  // live batches that came during the replay
};

}  // namespace warden::gateway
