// vLLM's own data-parallel balancer (interfaces.md; vllm/v1/engine/core_client.py,
// DPLBAsyncMPClient.get_core_engine_for_request), the one model of it that both `lm-warden sim` (in front of
// its ranks) and `lm-warden simulate` use:
// - a coordinator publishes every rank's (waiting, running, kv_cache_usage) about every 100 ms
//   (vllm/v1/engine/coordinator.py); a publish replaces each API server's local copy wholesale;
// - `api_servers` API server processes (default: one per DP rank) share the port through SO_REUSEPORT, so
//   each request meets one of them at random;
// - each API server scans the ranks from its start index (first ranks * index / api_servers) and takes the
//   first strict minimum of vllm_lb_score (core/decide.hpp) over its local copy, then adds `api_servers` to
//   that rank's local waiting count (its guess that every other server does the same between publishes).
//   Model `current` also floors each rank's load at api_servers x the server's own unfinished requests
//   there (exact, never reset by a publish), adds the KV-pressure penalty, and moves the scan start one rank
//   on after every pick; `legacy` (older vLLM) scores 4 * waiting + running from a fixed start.
// The score is the routing core's, so the core's `vllm-lb` policy and this model cannot drift apart; what
// this adds on top is the per-server stale view, the scan order and the per-server in-flight counts.
// Pure and deterministic: the caller passes the rng, the publish times and the finishes.
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
  double kv_usage = 0.0;  // 0..1, `vllm:kv_cache_usage_perc`
};

/// One pick: the API server that made it (finish() goes back to it) and the rank.
struct BalancerPick {
  std::uint32_t server = 0;
  ReplicaIndex rank = 0;
};

class VllmBalancer {
 public:
  // `api_servers` 0 means one per rank (vLLM's default with the internal balancer).
  VllmBalancer(std::uint32_t ranks, std::uint32_t api_servers,
               VllmBalancerModel model = VllmBalancerModel::current);

  // The coordinator's publish: every server's copy becomes `loads` (one entry per rank).
  void publish(std::span<const RankLoad> loads);

  // Routes one request: a server chosen by `rng` (the kernel's SO_REUSEPORT pick), then its scan.
  BalancerPick route(Rng& rng);
  // Routes through a given server (the sim picks the server per connection).
  ReplicaIndex route_via(std::uint32_t server);
  // A request `server` sent to `rank` has finished (or was aborted).
  void finish(std::uint32_t server, ReplicaIndex rank);

  std::uint32_t api_servers() const { return static_cast<std::uint32_t>(servers_.size()); }
  std::uint32_t ranks() const { return ranks_; }
  VllmBalancerModel model() const { return model_; }
  // Server `server`'s current local copy, unfinished requests per rank and scan start (tests).
  const std::vector<RankLoad>& view(std::uint32_t server) const { return servers_.at(server).view; }
  const std::vector<std::uint32_t>& in_flight(std::uint32_t server) const {
    return servers_.at(server).in_flight;
  }
  std::uint32_t start_index(std::uint32_t server) const { return servers_.at(server).start; }

 private:
  struct Server {
    std::vector<RankLoad> view;
    std::vector<std::uint32_t> in_flight;
    std::uint32_t start = 0;
  };
  std::uint32_t ranks_;
  VllmBalancerModel model_;
  std::vector<Server> servers_;
};

}  // namespace warden::core
