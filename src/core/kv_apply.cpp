#include "core/kv_apply.hpp"

#include <variant>

namespace warden::core {

namespace {

namespace kv = protocol::kv;

std::optional<KvTier> tier_of(kv::Medium medium) {
  switch (medium) {
    case kv::Medium::gpu:
      return KvTier::gpu;
    case kv::Medium::cpu:
      return KvTier::cpu;
    case kv::Medium::storage:
    case kv::Medium::other:
      break;
  }
  return std::nullopt;
}

struct Apply {
  KvIndex& index;
  KvApplied& out;

  void operator()(const kv::BlockStored& e) const {
    const auto tier = tier_of(e.medium);
    if (!tier) {
      ++out.ignored_events;
      return;
    }
    KvStore store;
    store.hashes = e.block_hashes;
    store.parent = e.parent_block_hash;
    store.block_size = e.block_size;
    store.tier = *tier;
    store.group = e.group_idx;
    // A kind the index does not know (a new attention variant, say) is read as attention only when it is
    // one; anything else is a state group, which never counts as cache.
    store.attention = kv::is_attention(e.kind);
    store.thread = kv::session_key(e.session_id);
    index.stored(store);
    out.stored_blocks += e.block_hashes.size();
  }
  void operator()(const kv::BlockRemoved& e) const {
    const auto tier = tier_of(e.medium);
    if (!tier) {
      ++out.ignored_events;
      return;
    }
    index.removed(e.block_hashes, *tier, e.group_idx);
    out.removed_blocks += e.block_hashes.size();
  }
  void operator()(const kv::AllBlocksCleared&) const {
    index.cleared();
    ++out.clears;
  }
};

}  // namespace

KvApplied apply_events(const protocol::kv::EventBatch& batch, KvIndex& index) {
  KvApplied out;
  for (const kv::Event& event : batch.events) {
    std::visit(Apply{index, out}, event);
  }
  return out;
}

}  // namespace warden::core
