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

// A GPU cache of 10 blocks of 4 tokens beside `offload_gib` of host memory (CPU KV offload); every step
// costs 10 ms but the PCIe loads. A block is 4 tokens of Qwen3-4B's KV (147,456 bytes each): `gib` of host
// memory holds gib * 2^30 / 589,824 blocks.
inline EngineConfig small_offload(double offload_gib) {
  EngineConfig c = instant_steps(0.01);
  c.block_size = 4;
  c.num_gpu_blocks = 10;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 100;
  c.kv_offloading_size = offload_gib;
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
