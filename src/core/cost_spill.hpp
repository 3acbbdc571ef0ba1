#pragma once
// Spill by cost: predicted time to first token at home against the best other replica, from the prefill
// backlog the warden has sent each replica and the replica's measured prefill rate. Pure, over the
// Snapshot.

#include <optional>

#include "core/rng.hpp"
#include "core/types.hpp"

namespace warden::core {

/// Seconds until a request needing `tokens` of prefill would get its first token on `replica`: its
/// backlog plus those tokens at its prefill rate. nullopt while the rate is unknown.
[[nodiscard]] std::optional<double> predicted_ttft(const ReplicaState& replica, std::uint64_t tokens);

/// Prompt tokens a turn must prefill at its home: the prompt minus what the home holds from the previous
/// turn.
[[nodiscard]] std::uint32_t uncached_at_home(const RequestFacts& facts);

/// Rule 5 by cost (snapshot.routing.cost_spill enabled, the home's rate known): the healthy non-home replica
/// with the lowest predicted TTFT for the whole prompt, if the wait that saves against staying home exceeds
/// the move's price (the target's prefill of the whole prompt, which its queue waits for too) plus the
/// margin; nullopt = stay home. With admission enabled a target must have room for the prompt in its working
/// set (a spill must not evict the conversations resident there). Ties by RNG.
[[nodiscard]] std::optional<ReplicaIndex> cost_spill_target(const Snapshot& snapshot,
                                                            const RequestFacts& facts, ReplicaIndex home,
                                                            Rng& rng);

}  // namespace warden::core
