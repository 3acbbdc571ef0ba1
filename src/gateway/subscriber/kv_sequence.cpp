#include "gateway/subscriber/kv_sequence.hpp"

#include <utility>

namespace warden::gateway {

KvSequence::KvSequence(bool can_replay, std::chrono::milliseconds replay_timeout, std::size_t max_pending)
    : can_replay_(can_replay), replay_timeout_(replay_timeout), max_pending_(max_pending) {}

void KvSequence::live(KvMessage m, Clock::time_point now, Out& out) {
  if (replaying_) {
    if (pending_.size() < max_pending_) {
      pending_.push_back(std::move(m));
      return;
    }
    out.replay_abandoned = true;  // a replay slower than the stream: give it up
    finish_replay(out);
  }
  if (!expected_ || m.seq < *expected_) {
    // A first batch, or the publisher restarted (seq went back): the index starts again.
    reset_due_ = expected_.has_value();
    expected_ = 0;
    if (m.seq == 0) {
      take(std::move(m), false, out);
      return;
    }
    pending_.push_back(std::move(m));
    start_replay(0, now, out);
    return;
  }
  if (m.seq > *expected_) {
    pending_.push_back(std::move(m));
    start_replay(*expected_, now, out);
    return;
  }
  take(std::move(m), false, out);
}

void KvSequence::replayed(KvMessage m, Out& out) {
  if (!replaying_) {
    return;  // a late answer of an abandoned replay
  }
  if (m.seq >= *expected_) {
    take(std::move(m), true, out);
  }
}

void KvSequence::replay_ended(Out& out) {
  if (replaying_) {
    if (reset_due_ && expected_ == 0) {
      // Asked from 0 and answered with nothing: the engine has published nothing since it started (its
      // buffer keeps the last batches, so any would be there), so its cache is empty and the index whole.
      out.steps.push_back(KvResetStep{true, *reset_due_});
      reset_due_.reset();
    }
    finish_replay(out);
  }
}

void KvSequence::connected(Clock::time_point now, Out& out) {
  if (expected_ || replaying_ || !can_replay_) {
    return;
  }
  reset_due_ = false;
  expected_ = 0;
  start_replay(0, now, out);
}

void KvSequence::tick(Clock::time_point now, Out& out) {
  if (replaying_ && now >= deadline_) {
    out.replay_abandoned = true;
    finish_replay(out);
  }
}

void KvSequence::start_replay(std::int64_t from, Clock::time_point now, Out& out) {
  const bool join = reset_due_.has_value() && from == 0;
  gap_open_ = true;
  out.steps.push_back(KvGapStep{true, join, can_replay_});
  if (!can_replay_) {
    finish_replay(out);  // nothing can fill it
    return;
  }
  replaying_ = true;
  deadline_ = now + replay_timeout_;
  out.replay_from = from;
}

void KvSequence::finish_replay(Out& out) {
  replaying_ = false;
  std::optional<std::int64_t> previous;  // the live stream's seq before this one
  while (!pending_.empty()) {
    KvMessage m = std::move(pending_.front());
    pending_.pop_front();
    const bool went_back = previous && m.seq < *previous;
    previous = m.seq;
    if (m.seq >= *expected_) {
      take(std::move(m), false, out);  // past a hole the replay left: cleared first
    } else if (m.seq == 0 && went_back) {
      reset_due_ = true;  // the publisher restarted while the replay ran
      expected_ = 0;
      take(std::move(m), false, out);
    }
    // Else the replay has answered it already (the live copy of a batch published as the warden joined).
  }
  if (gap_open_) {
    gap_open_ = false;
    out.steps.push_back(KvGapStep{false, false, false});
  }
}

void KvSequence::take(KvMessage m, bool replayed, Out& out) {
  if (m.seq > *expected_) {
    // Batches in between are lost: what they stored or removed is unknown.
    out.steps.push_back(KvResetStep{false, reset_due_.value_or(false)});
    reset_due_.reset();
  } else if (reset_due_) {
    out.steps.push_back(KvResetStep{m.seq == 0, *reset_due_});
    reset_due_.reset();
  }
  expected_ = m.seq + 1;
  if (m.batch) {
    out.steps.push_back(KvApplyStep{m.seq, std::move(*m.batch), replayed});
  } else {
    out.steps.push_back(KvDecodeErrorStep{std::move(m.batch.error())});
  }
}

}  // namespace warden::gateway
