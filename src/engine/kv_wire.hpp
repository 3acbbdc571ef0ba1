#pragma once
// An engine step's KV cache events (engine/kv_events.hpp) as vLLM puts them on the wire: one EventBatch of
// protocol::kv events (BlockStored with every field vLLM sends, BlockRemoved, AllBlocksCleared). The sim
// server publishes these batches over ZMQ; the what-if driver encodes and decodes them on their way to the
// warden's index, so both take the path `serve` takes.

#include <cstdint>
#include <optional>
#include <span>

#include "engine/kv_events.hpp"
#include "protocol/kv_events.hpp"

namespace warden::engine {

/// The batch of one step's events, stamped `ts` (seconds) and, with data parallelism, the rank.
[[nodiscard]] protocol::kv::EventBatch to_wire(std::span<const KvEvent> events, double ts,
                                               std::optional<std::int64_t> rank = std::nullopt);

}  // namespace warden::engine
