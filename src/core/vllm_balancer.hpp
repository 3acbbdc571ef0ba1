// vLLM's own data-parallel balancer (interfaces.md, vLLM V1 DPLBAsyncMPClient.get_core_engine_for_request),
// the one model of it that both `lm-warden sim` (in front of its ranks) and `lm-warden simulate` use:
// - a coordinator publishes every rank's (waiting, running) about every 100 ms; a publish replaces each
//   API server's local copy wholesale;
// - `api_servers` API server processes (default: one per DP rank) share the port through SO_REUSEPORT, so
//   each request meets one of them at random;
// - each API server scans the ranks starting at its own index (ranks * index / api_servers) and takes the
//   first with the strictly lowest 4 * waiting + running of its local copy, then adds `api_servers` to that
//   rank's local waiting count (its guess that every other server does the same between publishes).
// The score and the scan are the routing core's (decide_balanced over a snapshot rotated to the server's
// scan order, ties to the first), so the core's `vllm-lb` policy and this model cannot drift apart; what
// this adds on top of the core policy is the per-server stale view and its start index.
// Pure and deterministic: the caller passes the rng and the publish times.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.hpp"
#include "core/types.hpp"

namespace warden::core {

struct RankLoad {
  std::uint32_t waiting = 0;
  std::uint32_t running = 0;
};

class VllmBalancer {
 public:
  // `api_servers` 0 means one per rank (vLLM's default with the internal balancer).
  VllmBalancer(std::uint32_t ranks, std::uint32_t api_servers);

  // The coordinator's publish: every server's copy becomes `loads` (one entry per rank).
  void publish(std::span<const RankLoad> loads);

  // Routes one request: a server chosen by `rng` (the kernel's SO_REUSEPORT pick), then its scan.
  ReplicaIndex route(Rng& rng);
  // Routes through a given server (the sim picks the server per connection).
  ReplicaIndex route_via(std::uint32_t server);

  std::uint32_t api_servers() const { return static_cast<std::uint32_t>(views_.size()); }
  std::uint32_t ranks() const { return ranks_; }
  // Server `server`'s current local copy (tests).
  const std::vector<RankLoad>& view(std::uint32_t server) const { return views_.at(server); }
  std::uint32_t start_index(std::uint32_t server) const;

 private:
  std::uint32_t ranks_;
  std::vector<std::vector<RankLoad>> views_;
  Snapshot snapshot_;  // reused: the rotated view handed to the core
};

}  // namespace warden::core
