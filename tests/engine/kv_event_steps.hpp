// Test helpers for the engine's KV cache events: stepping an engine while collecting them, picking some
// out, and the hashes a cache holds.
#pragma once

#include <functional>
#include <unordered_set>
#include <vector>

#include "engine/engine.hpp"

namespace warden::engine::test {

// Steps `engine` until it has no work; every step's KV events in order.
inline std::vector<KvEvent> drain(Engine& engine, double& now) {
  std::vector<KvEvent> out;
  while (engine.has_work()) {
    StepResult r = engine.step(now);
    now += r.duration;
    out.insert(out.end(), r.kv_events.begin(), r.kv_events.end());
  }
  return out;
}

inline std::vector<KvEvent> only(const std::vector<KvEvent>& events,
                                 const std::function<bool(const KvEvent&)>& keep) {
  std::vector<KvEvent> out;
  for (const KvEvent& e : events) {
    if (keep(e)) {
      out.push_back(e);
    }
  }
  return out;
}

inline bool gpu_stored(const KvEvent& e) {
  return e.kind == KvEvent::Kind::stored && e.medium == KvEvent::Medium::gpu && e.group_idx == 0;
}

inline bool gpu_removed(const KvEvent& e) {
  return e.kind == KvEvent::Kind::removed && e.medium == KvEvent::Medium::gpu && e.group_idx == 0;
}

// Every hash the cache would find now.
inline std::unordered_set<BlockHash> cached_hashes(const BlockCache& cache) {
  std::unordered_set<BlockHash> out;
  for (BlockId b = 0; b < cache.num_blocks(); ++b) {
    if (const auto h = cache.block_hash(b)) {
      out.insert(*h);
    }
  }
  return out;
}

}  // namespace warden::engine::test
