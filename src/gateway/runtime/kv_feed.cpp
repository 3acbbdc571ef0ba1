#include "gateway/runtime/kv_feed.hpp"

#include <algorithm>

namespace warden::gateway {

namespace {

// Blocks of prompt the engine may compute without a store announced: a prompt's last partial block is
// not stored, so a few short requests store nothing; four blocks of computed prompt do.
constexpr double kUnannouncedBlocks = 4;
constexpr std::uint32_t kDefaultBlockSize = 16;

}  // namespace

void KvFeed::listen(std::chrono::milliseconds stale_after) {
  index_ = std::make_shared<core::KvIndex>();
  stale_after_ = stale_after;
  connected_ = started_ = gap_ = stale_ = false;
  last_batch_ = {};
  note_exact();
}

void KvFeed::stop_listening() {
  index_.reset();
  connected_ = started_ = gap_ = stale_ = false;
  note_exact();
}

void KvFeed::note_exact() {
  const bool exact_now = exact();
  if (was_exact_ && !exact_now) {
    ++counts_.fallbacks;
  }
  was_exact_ = exact_now;
}

void KvFeed::set_connected(bool connected) {
  connected_ = connected;
  note_exact();
}

bool KvFeed::reset(bool complete, bool restart) {
  if (!index_) {
    return false;
  }
  const bool cleared = started_;  // the first batch's reset clears nothing the index knew
  index_->cleared();
  index_->set_complete(complete);
  started_ = true;
  counts_.clears += cleared ? 1 : 0;
  counts_.restarts += restart ? 1 : 0;
  note_exact();
  return cleared;
}

void KvFeed::set_gap(bool open, bool counted, bool replay) {
  gap_ = open;
  counts_.gaps += open && counted ? 1 : 0;
  counts_.replays += open && replay ? 1 : 0;
  note_exact();
}

core::KvApplied KvFeed::apply(const protocol::kv::EventBatch& batch, core::Time now, double now_unix) {
  if (!index_) {
    return {};
  }
  started_ = true;
  stale_ = false;
  last_batch_ = now;
  computed_at_batch_ = computed_now_;
  const core::KvApplied applied = core::apply_events(batch, *index_);
  ++counts_.batches;
  counts_.events += batch.events.size();
  counts_.stored_blocks += applied.stored_blocks;
  counts_.removed_blocks += applied.removed_blocks;
  counts_.clears += applied.clears;  // AllBlocksCleared: the engine's own reset
  if (batch.ts > 0) {
    counts_.lag_last = std::max(0.0, now_unix - batch.ts);
    counts_.lag_sum += counts_.lag_last;
    ++counts_.lag_count;
    const auto bucket = std::lower_bound(kKvLagBounds.begin(), kKvLagBounds.end(), counts_.lag_last);
    ++counts_.lag_buckets[static_cast<std::size_t>(bucket - kKvLagBounds.begin())];
  }
  note_exact();
  return applied;
}

void KvFeed::observe_computed(double computed_tokens, core::Time now) {
  if (computed_tokens < computed_now_) {
    computed_at_batch_ = computed_tokens;  // the counters restarted (a new engine process)
  }
  computed_now_ = computed_tokens;
  if (!index_ || !started_ || now - last_batch_ < stale_after_) {
    return;
  }
  const double unannounced = computed_now_ - computed_at_batch_;
  const std::uint32_t block = index_->block_size() != 0 ? index_->block_size() : kDefaultBlockSize;
  stale_ = unannounced >= kUnannouncedBlocks * block;
  note_exact();
}

bool KvFeed::exact() const {
  return index_ && connected_ && started_ && !gap_ && !stale_;
}

std::optional<double> KvFeed::idle_seconds(core::Time now) const {
  if (!started_ || last_batch_ == core::Time{}) {
    return std::nullopt;
  }
  return std::max(0.0, std::chrono::duration<double>(now - last_batch_).count());
}

}  // namespace warden::gateway
