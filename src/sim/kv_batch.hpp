#pragma once
// The engine model's KV cache events (engine/kv_events.hpp) as vLLM's wire events (protocol/kv_events.hpp):
// one batch per engine step, as vLLM's scheduler publishes them.

#include <span>

#include "engine/kv_events.hpp"
#include "protocol/kv_events.hpp"

namespace warden::sim {

/// The batch of one step's `events`, stamped with wall time `ts` (unix seconds, as vLLM's time.time()).
[[nodiscard]] protocol::kv::EventBatch kv_batch(std::span<const engine::KvEvent> events, double ts);

}  // namespace warden::sim
