// Per-rank engine configuration: the vLLM cache/scheduler settings plus the step-time model.
#pragma once

#include <cstdint>
#include <string>

#include "engine/result.hpp"
#include "engine/step_time.hpp"

namespace warden::engine {

struct EngineConfig {
  std::string preset = "custom";                // name shown in logs / what-if reports
  std::uint32_t block_size = 16;                // tokens per KV block (vLLM default 16)
  std::uint32_t num_gpu_blocks = 2500;          // KV blocks per rank
  std::uint32_t max_num_seqs = 32;              // running requests per rank
  std::uint32_t max_num_batched_tokens = 2048;  // tokens per step (chunked prefill budget)
  std::uint32_t max_model_len = 32768;          // prompt + output limit per request
  double gpu_memory_utilization = 0.9;          // informational: reported in vllm:cache_config_info
  StepTimeModel time;
};

// Consistency checks (all sizes > 0, block_size <= max_num_batched_tokens, efficiencies in (0,1], ...).
Result<void> validate(const EngineConfig& config);

}  // namespace warden::engine
