// Per-rank engine configuration: the vLLM cache/scheduler settings plus the step-time model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/result.hpp"
#include "engine/step_time.hpp"

namespace warden::engine {

// When a reply ends by itself, as a model emitting EOS. Its length is drawn once per request from a
// log-normal with this median and spread (sigma of the log), from the request's sample seed (so the same
// prompt gets the same length on every rank), then capped by max_tokens and the context.
// median 0: replies never end by themselves; every one runs to its cap.
struct ReplyLength {
  double median = 0;  // tokens
  double sigma = 0;   // ln(p84 / median); 0 = every reply exactly `median` tokens
};

// When a request offers tools, the engine may answer with tool calls instead of text, as an agent's model
// does (engine/tool_calls.hpp). A task (a user prompt) gets a number of tool rounds drawn from a geometric
// distribution of mean `rounds`, then a text reply. Defaults from real agent sessions (docs/sim.md).
// rounds 0: never a tool call (the default: the reference workload offers none anyway).
struct ToolCallModel {
  double rounds = 0;       // mean tool rounds per task; 0 = off
  double parallel = 0.36;  // probability that a round holds more than one call
  double subagent = 0.05;  // probability that a task starts with a subagent (when one can be started)
};

// The order of vLLM's waiting queue and its choice of preemption victim (`--scheduling-policy`):
// fcfs admits by arrival and preempts the latest admitted running request; priority admits by
// (RequestSpec::priority, arrival) and preempts the running request with the largest (priority, arrival).
enum class SchedulingPolicy { fcfs, priority };
std::string_view scheduling_policy_name(SchedulingPolicy policy);  // "fcfs", "priority"
std::optional<SchedulingPolicy> parse_scheduling_policy(std::string_view name);

struct EngineConfig {
  std::string preset = "custom";  // name shown in logs / what-if reports
  // Tokens per KV block as asked (vLLM's --block-size, default 16). A hybrid model's block is larger:
  // vLLM pads the attention page to the linear state's page (engine/cache_layout.hpp).
  std::uint32_t block_size = 16;
  // KV blocks per rank (vLLM's --num-gpu-blocks-override); 0 = as vLLM sizes the pool from the card's
  // memory: gpu_memory_bytes x gpu_memory_utilization - weights - memory_reserve_bytes.
  std::uint32_t num_gpu_blocks = 2500;
  double gpu_memory_bytes = 0;      // memory vLLM sees on the card; 0 = unknown (num_gpu_blocks is set)
  double memory_reserve_bytes = 0;  // activation peak, CUDA graphs and non-torch memory at profiling
  // vLLM's --kv-cache-memory-bytes: the pool is this many bytes (whole blocks), whatever the card and
  // num_gpu_blocks say; 0 = unset. vLLM reports it in vllm:cache_config_info, the warden reads it.
  double kv_cache_memory_bytes = 0;
  std::uint32_t max_num_seqs = 32;              // running requests per rank
  std::uint32_t max_num_batched_tokens = 2048;  // tokens per step (chunked prefill budget)
  std::uint32_t max_model_len = 32768;          // prompt + output limit per request
  // Admission gate of current vLLM (`scheduler_reserve_full_isl`, on by default since 2026): 1 admits a
  // waiting request only when the blocks of its whole prompt fit, 0 (older vLLM) when its first chunk
  // does, which over-admits under chunked prefill and then preempts.
  std::uint32_t reserve_full_prompt = 1;
  double kv_watermark = 0;  // vLLM's `watermark`: fraction of blocks an admission leaves free (default 0)
  // vLLM's native CPU KV offload (`--kv-offloading-size`, GiB of host memory per rank; 0 = off, vLLM's
  // default): computed blocks are copied to a host LRU and loaded back over PCIe (engine/offload_tier.hpp).
  double kv_offloading_size = 0;
  SchedulingPolicy scheduling_policy = SchedulingPolicy::fcfs;  // vLLM's default
  // vLLM's --kv-events-config enable_kv_cache_events: each step reports the blocks it stored in and evicted
  // from the caches (StepResult::kv_events, engine/kv_events.hpp). Off by default, as in vLLM.
  bool kv_events = false;
  // Sizes the pool when num_gpu_blocks is 0; otherwise only reported in vllm:cache_config_info.
  double gpu_memory_utilization = 0.9;
  ReplyLength reply;    // off unless set (a4000 and h200 set agent-like replies)
  ToolCallModel tools;  // off unless tools.rounds > 0
  StepTimeModel time;
};

}  // namespace warden::engine
