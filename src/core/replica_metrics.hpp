#pragma once
// What the poller knows about one replica, as the Router reads it.

#include <cstdint>

#include "core/replica_figures.hpp"

namespace warden::core {

class KvIndex;

/// What the poller knows about one replica: its engine's figures (observe_report) and health.
struct ReplicaMetrics : ReplicaFigures {
  bool healthy = true;
  /// Incremented by the poller on every successful scrape of this replica: when it changes, the Router
  /// resets the replica's sent_since_scrape (vLLM's balancer view works the same way).
  std::uint64_t scrape_generation = 0;
  /// The other wardens' load on this replica (ReplicaState's peer_* fields).
  std::uint32_t peer_in_flight = 0;
  std::uint32_t peer_active_conversations = 0;
  std::uint64_t peer_held_tokens = 0;
  std::uint32_t peer_wardens = 0;  ///< other wardens whose load is fresh
  /// What the replica's KV cache events say its cache holds, while they are live (null: not listening, or
  /// the events stopped or have a gap not yet replayed; the estimate applies). Not owned: the caller keeps
  /// the index alive while the Router may read it.
  const KvIndex* kv = nullptr;
};

}  // namespace warden::core
