#pragma once
// A decoded batch of KV cache events (protocol/kv_events.hpp) applied to a replica's index: the one path by
// which `serve` (the gateway's subscriber) and `simulate` (the engine model's own events, encoded and
// decoded) feed core::KvIndex.

#include <cstdint>

#include "core/kv_index.hpp"
#include "protocol/kv_events.hpp"

namespace warden::core {

/// What applying a batch did, for the metrics.
struct KvApplied {
  std::uint64_t stored_blocks = 0;
  std::uint64_t removed_blocks = 0;
  std::uint64_t clears = 0;
  std::uint64_t ignored_events = 0;  ///< a medium the index does not keep (STORAGE, unknown)
};

KvApplied apply_events(const protocol::kv::EventBatch& batch, KvIndex& index);

}  // namespace warden::core
