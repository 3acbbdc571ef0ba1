#include "engine/kv_event_log.hpp"

#include <utility>

namespace warden::engine {

KvEventLog::KvEventLog(bool on, std::uint32_t block_size, std::uint32_t mamba_groups)
    : on_(on), block_size_(block_size), mamba_groups_(mamba_groups) {}

KvEvent KvEventLog::gpu_stored(const StoredBlocks& blocks, std::vector<BlockHash> hashes) const {
  KvEvent e;
  e.kind = KvEvent::Kind::stored;
  e.hashes = std::move(hashes);
  e.parent = blocks.first == 0 ? kRootBlockHash : blocks.hashes[blocks.first - 1];
  e.token_ids.assign(blocks.tokens.begin() + static_cast<std::ptrdiff_t>(blocks.first * block_size_),
                     blocks.tokens.begin() + static_cast<std::ptrdiff_t>(blocks.last * block_size_));
  e.block_size = block_size_;
  if (blocks.session_id != nullptr) {
    e.session_id = *blocks.session_id;
  }
  return e;
}

KvEvent KvEventLog::gpu_removed(BlockHash hash, std::uint32_t group) const {
  KvEvent e;
  e.kind = KvEvent::Kind::removed;
  e.hashes = {hash};
  e.group_idx = group;
  e.group_kind = group == 0 ? KvEvent::GroupKind::full_attention : KvEvent::GroupKind::mamba;
  return e;
}

void KvEventLog::stored(const StoredBlocks& blocks) {
  if (!on_ || blocks.first >= blocks.last) {
    return;
  }
  const auto first = blocks.hashes.begin() + static_cast<std::ptrdiff_t>(blocks.first);
  const auto last = blocks.hashes.begin() + static_cast<std::ptrdiff_t>(blocks.last);
  events_.push_back(gpu_stored(blocks, {first, last}));
  if (mamba_groups_ == 0) {
    return;
  }
  // Align mode: the only non-null block is the state's, cached when the step ends on its boundary.
  std::vector<BlockHash> checkpoint;
  if (blocks.upto == blocks.last * block_size_) {
    checkpoint.push_back(blocks.hashes[blocks.last - 1]);
    checkpoints_.insert(checkpoint.back());
  }
  for (std::uint32_t g = 1; g <= mamba_groups_; ++g) {
    KvEvent e = gpu_stored(blocks, checkpoint);
    e.group_idx = g;
    e.group_kind = KvEvent::GroupKind::mamba;
    events_.push_back(std::move(e));
  }
}

void KvEventLog::removed(BlockHash hash) {
  if (!on_) {
    return;
  }
  events_.push_back(gpu_removed(hash, 0));
  if (checkpoints_.erase(hash) == 0) {
    return;
  }
  for (std::uint32_t g = 1; g <= mamba_groups_; ++g) {
    events_.push_back(gpu_removed(hash, g));
  }
}

void KvEventLog::cpu_stored(BlockHash hash) {
  cpu(KvEvent::Kind::stored, hash);
}

void KvEventLog::cpu_removed(BlockHash hash) {
  cpu(KvEvent::Kind::removed, hash);
}

void KvEventLog::cpu(KvEvent::Kind kind, BlockHash hash) {
  if (!on_) {
    return;
  }
  KvEvent e;
  e.kind = kind;
  e.medium = KvEvent::Medium::cpu;
  e.hashes = {hash};
  events_.push_back(std::move(e));
}

std::vector<KvEvent> KvEventLog::take() {
  return std::exchange(events_, {});
}

}  // namespace warden::engine
