// The what-if driver: N engine models, the agent workload in closed loop and the warden's routing, in
// virtual time. Deterministic: the same config gives the same rows, byte for byte.
//
// One run = for each policy, every level in turn (like `bench`): a closed loop of `sessions` sessions
// runs for `duration` model seconds (the measuring window), then the loop stops handing out turns and
// the driver drains what is in flight before the next level starts. Engines carry their caches from
// level to level, and from one policy to the next when `warm_start` is set (the reference method). Else
// each policy is its own experiment: new engines at time 0, and its rows the same whatever ran before it;
// every level reseeds the random streams from the seed and its index.
//
// Per request: the slot's conversation is rendered to tokens with the engine's chat template (as the sim
// server does), it reaches the warden rtt/2 after the client sent it and is routed there:
// - vLLM's own balancer (VllmBalancer: api-server instances with 100 ms stale views, scoring as
//   `vllm_balancer` says: current vLLM by default, or its older legacy score) for policies `vllm-lb` and
//   `ceiling`;
// - else core::Router, the same object `serve` uses, running the row's core policy (whatif/policies.hpp),
//   fed the engines' metrics as last scraped (every scrape_interval) and its own live in-flight counts.
//   Requests the Router answers `queued` (policies `admission`, `tasks`, and affinity's task admission)
//   wait in the gateway's hold queue (core::HoldQueue, whose rules apply: a request they could hold, a new
//   conversation or under task admission alone a new session's main thread, also queues behind held ones) and
//   are routed again, with queued_for = their wait, when a request finishes, at a scrape and at the head's
//   deadline; beyond max_queue a request fails as the gateway's 503 would.
// The engine emits tokens; the first one reaches the client rtt/2 later (TTFB = that minus send time); the
// last one completes the turn and the reply, detokenized, is appended to the history by the workload.
#pragma once

#include "base/result.hpp"
#include "whatif/policies.hpp"
#include "whatif/sim_types.hpp"

namespace warden::whatif {

using base::Result;

Result<void> validate(const SimulationConfig& config);

Result<Outcome> simulate(const SimulationConfig& config, const Hooks& hooks = {});

}  // namespace warden::whatif
