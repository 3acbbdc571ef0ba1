// The routing side of a what-if run, as one policy of simulate's table runs it (whatif/policies.hpp):
// vLLM's own balancer (core::VllmBalancer, fed by its coordinator's publishes), or one core::Router per
// warden fed the scraped metrics (whatif/senses.hpp) with the gateway's hold queue in front; a request is
// routed when it reaches the warden, held ones again at each finish, scrape and the head's deadline.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "base/result.hpp"
#include "core/hold_queue.hpp"
#include "core/router.hpp"
#include "core/vllm_balancer.hpp"
#include "whatif/flight.hpp"
#include "whatif/policies.hpp"

namespace warden::whatif {

struct SimulationConfig;
struct Hooks;
struct LevelStats;
class Fleet;
class Senses;

class Warden {
 public:
  Warden(const SimulationConfig& config, const Hooks& hooks, const Fleet& fleet, const Senses& senses);

  // The policy's balancer or Routers, new, at `now`.
  base::Result<void> start(const SimulatePolicy& policy, double now);
  [[nodiscard]] const SimulatePolicy& policy() const { return *policy_; }
  // A level begins: its random streams from the seed.
  void start_level(std::size_t level);

  // vLLM's coordinator publishes the engines' loads to its API servers (policy vllm-lb).
  void publish(double now);
  [[nodiscard]] double next_publish() const { return next_publish_; }
  // The warden a request reaches (a load balancer in front of several picks one at random).
  std::uint32_t pick_warden();

  // What became of a request that reached the warden: handed to its replica, held, or failed (the
  // client's request had failed already, or the hold queue refused it).
  enum class Arrival : std::uint8_t { dispatch, held, failed };
  base::Result<Arrival> arrive(std::uint64_t id, Flight& f, double now, LevelStats& stats);
  // A round of the hold queue at `now`: each held request that goes is handed to `dispatch`.
  base::Result<void> retry_held(double now, Flights& flights, LevelStats& stats,
                                const std::function<void(std::uint64_t)>& dispatch);
  [[nodiscard]] bool holding() const { return !held_.empty(); }
  // When the first of the held requests reaches its deadline (kInf: none held).
  [[nodiscard]] double head_deadline(double now) const;

  // The request's first token, with the prompt tokens its engine served from cache.
  void first_token(Flight& f, std::uint32_t cached);
  // The request ended on its replica (finished, refused or lost).
  void finish(Flight& f);
  // Its reply reached the client: a subagent's final text ends its thread in the Router.
  void answered(const Flight& f, bool final_text);
  // The level's agents stopped mid-task: their tasks are not under way.
  void agents_stopped();
  // An agent task's size as the first warden measured it at `now`.
  [[nodiscard]] double task_tokens(double now);

 private:
  void route_vllm(Flight& f, double now, LevelStats& stats);
  core::RequestFacts request_facts(const Flight& f) const;
  core::WorkClass work_class(const Flight& f) const;
  base::Result<bool> route_request(Flight& f, core::Time waited, double now, LevelStats& stats);
  void trace(const core::Decision& decision, double now, const LevelStats& stats,
             std::optional<core::Snapshot> seen);
  void hold(std::uint64_t id, Flight& f, double now, LevelStats& stats);
  core::HoldRules hold_rules() const;
  void router_first_token(Flight& f);
  core::Router& router(const Flight& f) { return routers_[f.warden]; }

  const SimulationConfig& config_;
  const Hooks& hooks_;
  const Fleet& fleet_;
  const Senses& senses_;
  const SimulatePolicy* policy_ = nullptr;
  core::SplitMixRng rng_;         // routing ties, vLLM's SO_REUSEPORT pick
  core::SplitMixRng warden_rng_;  // which warden a request reaches (wardens > 1)
  std::optional<core::VllmBalancer> balancer_;
  double next_publish_ = 0;
  std::vector<core::Router> routers_;  // one per warden
  // The requests admission holds (by request id, since their arrival in model seconds), as the gateway
  // keeps them.
  core::HoldQueue<std::uint64_t, double> held_;
};

}  // namespace warden::whatif
