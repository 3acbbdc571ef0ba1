// Another client beside the warden (SimulationConfig::direct): its agents send their requests straight to
// the replicas, never through the warden. Their requests occupy the engines and their caches, and their
// blocks reach the warden's KV event index under the client's own session ids; but no Router routes them,
// holds them or counts them, so the warden's estimate of each cache never learns of them.
//
// Where each request goes is the client's own rule (DirectRule):
// - `vllm-lb`: the client is pointed at vLLM's own port, as any client of a data-parallel server is that
//   does not know the warden: vLLM's balancer (core::VllmBalancer, its coordinator publishing every
//   vllm_publish_interval) picks the rank of every request by load, with no regard to caches;
// - `hash`: a client that knows the replicas' own endpoints pins each of its conversations to one by a hash
//   of its session id (a sticky load balancer's `hash $http_x_session_id`): a session's subagents go to its
//   replica too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/rng.hpp"
#include "core/vllm_balancer.hpp"
#include "whatif/flight.hpp"

namespace warden::whatif {

struct SimulationConfig;
class Fleet;

class DirectClient {
 public:
  DirectClient(const SimulationConfig& config, const Fleet& fleet);

  // A level begins at `now`: the balancer new (its views and in-flight counts), its streams from the seed.
  void start_level(std::size_t level, double now);
  // The replica the client sends its request to (Flight::replica, and its API server for vllm-lb).
  void route(Flight& f);
  // The request ended on its replica (finished, refused or lost).
  void finish(const Flight& f);
  // vLLM's coordinator publishes the engines' loads (rule vllm-lb); kInf when the client has no balancer.
  void publish(double now);
  [[nodiscard]] double next_publish() const { return next_publish_; }

  // The session id the client sends with a request of the thread `thread_key`: its own, in its own form
  // (not the warden's 16 hex digits), so the index names its blocks under keys the warden never sends.
  static std::string session_id(std::uint64_t thread_key);

 private:
  const SimulationConfig& config_;
  const Fleet& fleet_;
  core::SplitMixRng rng_;  // vLLM's SO_REUSEPORT pick of an API server
  std::optional<core::VllmBalancer> balancer_;
  double next_publish_ = kInf;
};

}  // namespace warden::whatif
