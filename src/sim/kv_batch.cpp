#include "sim/kv_batch.hpp"

namespace warden::sim {

namespace {

namespace kv = protocol::kv;

kv::Medium medium(engine::KvEvent::Medium m) {
  return m == engine::KvEvent::Medium::cpu ? kv::Medium::cpu : kv::Medium::gpu;
}

kv::BlockStored stored(const engine::KvEvent& e) {
  kv::BlockStored s;
  s.block_hashes = e.hashes;
  if (e.parent != engine::kRootBlockHash) {
    s.parent_block_hash = e.parent;
  }
  s.token_ids = e.token_ids;
  s.block_size = e.block_size;
  s.medium = medium(e.medium);
  s.group_idx = e.group_idx;
  s.kind = e.group_kind == engine::KvEvent::GroupKind::mamba ? kv::GroupKind::mamba
                                                             : kv::GroupKind::full_attention;
  s.session_id = e.session_id;
  return s;
}

}  // namespace

kv::EventBatch kv_batch(std::span<const engine::KvEvent> events, double ts) {
  kv::EventBatch batch;
  batch.ts = ts;
  batch.events.reserve(events.size());
  for (const engine::KvEvent& e : events) {
    switch (e.kind) {
      case engine::KvEvent::Kind::stored:
        batch.events.emplace_back(stored(e));
        break;
      case engine::KvEvent::Kind::removed:
        batch.events.emplace_back(kv::BlockRemoved{e.hashes, medium(e.medium), e.group_idx});
        break;
      case engine::KvEvent::Kind::cleared:
        batch.events.emplace_back(kv::AllBlocksCleared{});
        break;
    }
  }
  return batch;
}

}  // namespace warden::sim
