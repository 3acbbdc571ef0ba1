#pragma once
// Re-homing a conversation whose home is overloaded: stickiness gives way when staying costs the turn more
// than moving does. Pure, over the Snapshot and the request's facts.

#include <optional>

#include "core/rng.hpp"
#include "core/types.hpp"

namespace warden::core {

/// Requests in flight on `replica` from every warden (this one's and the others' in the shared state).
[[nodiscard]] std::uint32_t live_requests(const ReplicaState& replica);

/// Whether the home has certainly lost this conversation's prefix: it computed at least its KV capacity in
/// other requests' prompt tokens since the conversation's previous turn there (LRU has reused every block
/// since), as the engine's own counters say.
[[nodiscard]] bool prefix_evicted(const ReplicaState& home, const RequestFacts& facts);

/// Rule 5, first (snapshot.routing.rebalance): whether the conversation leaves its home for good (route
/// `rehomed`) and for which healthy replica, the one with the fewest requests in flight (ties by RNG). Two
/// cases:
/// - its prefix is gone from the home (prefix_evicted): moving costs nothing, so it moves when the home has
///   at least 1 request in flight more (the turn starts sooner, as with vLLM's balancer);
/// - the home's working set overflows its KV capacity (held tokens > capacity) and the home has at least 2
///   more conversations homed and 2 more requests in flight (every warden's): a lasting imbalance (homes
///   kept from an earlier placement), not the moment-to-moment swing of requests in flight, which would
///   cost prefixes that are still cached. A move narrows both gaps by 2, so it is never undone.
/// Only a warden on its own moves conversations (peer_wardens == 0): with several, the computed mark of a
/// turn another warden routed arrives a second or two late, so a warden may judge by the mark of the turn
/// before last, and the moves measured cost far more prefix hits than they bought (routing.md).
/// nullopt = the home keeps it.
[[nodiscard]] std::optional<ReplicaIndex> rebalance_target(const Snapshot& snapshot,
                                                           const RequestFacts& facts, ReplicaIndex home,
                                                           Rng& rng);

}  // namespace warden::core
