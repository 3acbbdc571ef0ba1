// Test helpers: engines on hardware so fast that only the per-step overhead counts, and requests to them.
#pragma once

#include <utility>

#include "engine/engine.hpp"

namespace warden::engine::test {

// A config whose every step costs `step_overhead` seconds, whatever it computes or reads; the caller sizes
// the cache and the batch.
inline EngineConfig instant_steps(double step_overhead) {
  EngineConfig c;
  c.time.mem_bandwidth = 1e30;
  c.time.peak_flops = 1e30;
  c.time.step_overhead = step_overhead;
  return c;
}

inline RequestSpec req(RequestId id, Tokens prompt, int max_tokens, double arrival = 0) {
  RequestSpec r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.arrival_time = arrival;
  return r;
}

}  // namespace warden::engine::test
