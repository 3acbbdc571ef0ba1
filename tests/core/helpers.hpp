#pragma once
// Builders for routing tests: snapshots and facts in one line each.

#include <cstdint>
#include <initializer_list>
#include <optional>

#include "core/types.hpp"

namespace warden::core::testing {

/// n idle healthy replicas, affinity on, max_num_seqs 32, spill threshold 8.
inline Snapshot idle_snapshot(std::size_t n, std::uint32_t max_num_seqs = 32) {
  Snapshot s;
  s.routing.max_num_seqs = max_num_seqs;
  s.replicas.resize(n);
  return s;
}

/// Snapshot whose replicas have the given in_flight counts.
inline Snapshot with_in_flight(std::initializer_list<std::uint32_t> in_flight) {
  Snapshot s = idle_snapshot(in_flight.size());
  std::size_t i = 0;
  for (auto value : in_flight) {
    s.replicas[i++].in_flight = value;
  }
  return s;
}

inline RequestFacts new_conversation(std::uint64_t key = 42, std::uint32_t prompt_tokens = 1000) {
  RequestFacts f;
  f.session = SessionKey{key};
  f.prompt_tokens = prompt_tokens;
  return f;
}

inline RequestFacts known_conversation(ReplicaIndex home, std::uint64_t key = 42) {
  RequestFacts f = new_conversation(key);
  f.home = home;
  return f;
}

inline RequestFacts pinned(ReplicaIndex pin, std::optional<ReplicaIndex> home = std::nullopt) {
  RequestFacts f = new_conversation();
  f.pin = pin;
  f.home = home;
  return f;
}

inline Decision routed(ReplicaIndex replica, Route route) {
  return Decision{replica, route, NoReplicaReason::none};
}

inline Decision unrouted(Route route, NoReplicaReason reason) {
  return Decision{std::nullopt, route, reason};
}

}  // namespace warden::core::testing
