#include "engine/kv_wire.hpp"

namespace warden::engine {

namespace {

namespace kv = protocol::kv;

kv::Medium medium_of(KvEvent::Medium medium) {
  return medium == KvEvent::Medium::cpu ? kv::Medium::cpu : kv::Medium::gpu;
}

kv::GroupKind kind_of(KvEvent::GroupKind kind) {
  return kind == KvEvent::GroupKind::mamba ? kv::GroupKind::mamba : kv::GroupKind::full_attention;
}

kv::BlockStored stored(const KvEvent& e) {
  kv::BlockStored out;
  out.block_hashes.assign(e.hashes.begin(), e.hashes.end());
  if (e.medium == KvEvent::Medium::gpu && e.parent != kRootBlockHash) {
    out.parent_block_hash = e.parent;
  }
  out.token_ids.assign(e.token_ids.begin(), e.token_ids.end());
  out.token_count = static_cast<std::uint32_t>(e.token_ids.size());
  out.block_size = e.block_size;
  out.medium = medium_of(e.medium);
  out.group_idx = e.group_idx;
  out.kind = kind_of(e.group_kind);
  out.session_id = e.session_id;
  return out;
}

kv::BlockRemoved removed(const KvEvent& e) {
  kv::BlockRemoved out;
  out.block_hashes.assign(e.hashes.begin(), e.hashes.end());
  out.medium = medium_of(e.medium);
  out.group_idx = e.group_idx;
  return out;
}

}  // namespace

protocol::kv::EventBatch to_wire(std::span<const KvEvent> events, double ts,
                                 std::optional<std::int64_t> rank) {
  kv::EventBatch batch;
  batch.ts = ts;
  batch.data_parallel_rank = rank;
  batch.events.reserve(events.size());
  for (const KvEvent& e : events) {
    switch (e.kind) {
      case KvEvent::Kind::stored:
        batch.events.emplace_back(stored(e));
        break;
      case KvEvent::Kind::removed:
        batch.events.emplace_back(removed(e));
        break;
      case KvEvent::Kind::cleared:
        batch.events.emplace_back(kv::AllBlocksCleared{});
        break;
    }
  }
  return batch;
}

}  // namespace warden::engine
