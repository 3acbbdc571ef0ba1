#pragma once
// The warden's routing rule as a pure function: decide(snapshot, facts, rng) -> decision. The gateway, the
// what-if driver and the tests all call this same function. docs/routing.md explains the rules and the
// placement score for users.

#include "core/rng.hpp"
#include "core/types.hpp"

namespace warden::core {

/// The warden's rule (policy `affinity`; with snapshot.routing.affinity == false it is `vllm-lb`):
///  1. No replicas → no replica (no_replicas).
///  2. Pin → that replica, route `pinned`, even if unhealthy: the client asked for it explicitly and vLLM's
///     own X-data-parallel-rank has no fallback either. A pin out of range → no replica (pin_out_of_range).
///  3. No healthy replica → no replica (no_healthy_replica).
///  4. Affinity off → vLLM's rule: lowest vllm_lb_score(replica, snapshot.routing.vllm_balancer) among
///  healthy
///     replicas, ties by RNG; route `balanced`.
///  5. Known conversation, healthy home: with snapshot.routing.rebalance, first whether it should move for
///  good
///     (rebalance.hpp: its prefix is gone from the home and the home has more requests in flight than the
///     least-loaded other replica, or the home's working set overflows and it has 2 more conversations and
///     2 more requests in flight) → that replica, route `rehomed` (the Router re-homes the conversation).
///     Otherwise the home (`sticky`), unless it should spill (`spilled`; the home is kept). With cost_spill
///     enabled and the home's prefill rate known, by cost (cost_spill.hpp): the other replica with the lowest
///     predicted time to first token for the whole prompt, if that beats the home (backlog + uncached part)
///     by more than the margin. Otherwise by count: home.in_flight > spill_threshold → the healthy non-home
///     replica with the lowest load_score, but only if it is lower than the home's (a spill never moves a
///     request to a replica at least as loaded as home). Ties by RNG.
///  6. Known conversation whose home is unhealthy or out of range → least placement_score (`failover`; the
///     Router re-homes the conversation there).
///  7. New conversation (or no session key) → least placement_score among healthy replicas, ties by RNG
///     (`new_conversation`). With admission enabled (admission.hpp), only among replicas that can_admit()
///     it (room for this prompt in their working set under the water mark in force, or with
///     admission.only_when_waiting nothing waiting);
///     if none can, and the request has waited less than admission.max_wait → no replica, route `queued`
///     (reason none). Known conversations are never held.
///     A new thread with preferred replicas (facts.preferred: they hold another thread of its session, or
///     served its prompt start, so part of its prompt is cached there) whose best eligible replica is not
///     one of them goes to the best-scoring preferred one of comparable load among those eligible: at most
///     cached_start_slots() more requests and conversations (in_flight + active_conversations, the other
///     wardens' included) than the best (no more with a start shorter than the digest, !long_start), a
///     working set with the thread (its start counted once, where it is cached) within cached_start_margin of
///     the best's with the whole prompt, and fewer requests in flight than the spill threshold (background
///     subagents are never stacked where they would spill).
[[nodiscard]] Decision decide(const Snapshot& snapshot, const RequestFacts& facts, Rng& rng);

/// How much more of its KV cache (the memory term of placement_score, the new thread's start counted once
/// where it is cached) a replica that holds part of a new thread's prompt may fill than the best one and
/// still take it. docs/routing.md ("Threads") has the measurement behind the value.
inline constexpr double cached_start_margin = 0.1;

/// How many more requests and conversations such a replica may carry than the best one: one per 32 batch
/// slots, at least one (1 at max_num_seqs 32, 8 at vLLM's default 256). Three at 32 (a tenth of the batch)
/// stacked new agents two by two on idle replicas and doubled the TTFB p95 at 4 agents on 4 replicas;
/// docs/routing.md ("Threads") has the measurement.
inline constexpr std::uint32_t cached_start_seqs_per_slot = 32;
[[nodiscard]] std::uint64_t cached_start_slots(std::uint32_t max_num_seqs);

/// Score for placing a conversation (lower is better). With S = max(1, max_num_seqs) and C the KV capacity
/// in tokens, each count being this warden's plus the other wardens' (peer_*):
///   (in_flight + active_conversations) / S  +  max(kv_usage, C > 0 ? held_tokens / C : 0)
/// Slot pressure (live requests plus the conversations that will send the next ones) plus memory pressure
/// (the larger of what is allocated now and what the conversations' working set needs). The memory term
/// dominates once C is known: a conversation's prefix survives only if its home's working set fits the
/// KV cache. See docs/routing.md for the rationale.
[[nodiscard]] double placement_score(const ReplicaState& replica, std::uint32_t max_num_seqs);

/// Score for a one-off move (spill target; lower is better): (in_flight + peer_in_flight)/S + kv_usage. The
/// request will not hit the cache wherever it goes, so only the current load counts.
[[nodiscard]] double load_score(const ReplicaState& replica, std::uint32_t max_num_seqs);

/// One rank as vLLM's DP balancer sees it when it scores: its (stale) waiting count with the balancer's own
/// additions, running and KV usage as published, and `in_flight` already multiplied by the number of API
/// servers (vLLM's `client_count * engine_inflight`).
struct VllmLbLoad {
  double waiting = 0;
  double running = 0;
  double in_flight = 0;
  double kv_usage = 0;
};

/// vLLM's DP balancer score (lower is better):
///   current: max(in_flight, waiting + running) + waiting * 6 * max(0, kv_usage - 0.5)
///   legacy:  4 * waiting + running
[[nodiscard]] double vllm_lb_score(VllmBalancerModel model, const VllmLbLoad& load);

/// The same score over the warden's view (one API server, so in_flight counts once): waiting is the scraped
/// count plus sent_since_scrape, in_flight the warden's own. Legacy keeps the older warden form,
/// 4*waiting + running + sent_since_scrape.
[[nodiscard]] double vllm_lb_score(const ReplicaState& replica,
                                   VllmBalancerModel model = VllmBalancerModel::current);

/// Rule 4 alone (policy `vllm-lb`): pins honoured, then vLLM's balancer over healthy replicas.
[[nodiscard]] Decision decide_balanced(const Snapshot& snapshot, const RequestFacts& facts, Rng& rng);

/// Pin handling shared by every policy: if facts.pin is set, the decision for it (pinned, or
/// pin_out_of_range; also no_replicas); nullopt when there is no pin.
[[nodiscard]] std::optional<Decision> decide_pin(const Snapshot& snapshot, const RequestFacts& facts);

/// Number of healthy replicas.
[[nodiscard]] std::size_t healthy_count(const Snapshot& snapshot);

}  // namespace warden::core
