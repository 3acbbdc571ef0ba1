#pragma once
// The Router's use of the replicas' KV cache events (ReplicaMetrics::kv, core/kv_index.hpp) for the request
// being routed: what each replica holds of its thread, or of its start for a new one; where they are live
// this replaces the estimate of what a replica holds. Kept per request (reused vectors, no allocation once
// sized); not thread-safe: the Router serialises access.

#include <cstdint>
#include <span>
#include <vector>

#include "core/replica_metrics.hpp"
#include "core/thread_homes.hpp"
#include "core/types.hpp"

namespace warden::core {

class Residency {
 public:
  /// What each replica holds of the request's thread (or of its start) into its `cached_for_request`, and
  /// what the request will find there (expect()). Nothing for a policy that is not the warden's
  /// (`warden_policy` false: the baselines model routers that know nothing of the events) or a side
  /// request. The start's length, once told, is remembered in `threads`.
  void note(const RequestFacts& facts, std::span<const ReplicaMetrics> metrics, bool warden_policy,
            ThreadHomes& threads, Snapshot& snapshot);
  /// The home's exact figure, or a home found in the events, into the facts; for a new thread, the replicas
  /// whose events show its start resident become the ones it prefers.
  void use(RequestFacts& facts, const Snapshot& snapshot) const;
  /// Whether the chosen replica's witness of the request's start (StartHomes) still holds the whole start.
  [[nodiscard]] bool witness_holds(const RequestFacts& facts, ReplicaIndex chosen,
                                   std::span<const ReplicaMetrics> metrics, const ThreadHomes& threads) const;
  /// The decision's thread key, prefill and expected cached tokens on the chosen replica.
  void expect(const RequestFacts& facts, const Snapshot& snapshot, Decision& decision) const;

 private:
  std::uint64_t remember_start(const RequestFacts& facts, std::uint64_t told, ThreadHomes& threads);

  // Per replica: its events show the thread itself (not only its start).
  std::vector<std::uint8_t> holds_thread_;
  // Per replica: what the events say the request will find there (its chain, its start by the length they
  // told, what its spills stored), and whether they can say.
  std::vector<std::uint64_t> expected_tokens_;
  std::vector<std::uint8_t> expectable_;
  // The length of the request's start as the events tell it (0 = not known).
  std::uint64_t start_tokens_ = 0;
};

}  // namespace warden::core
