#include "engine/config_check.hpp"

#include <string>

#include "engine/cache_layout.hpp"

namespace warden::engine {

namespace {

constexpr std::uint32_t kMaxBlocks = 20'000'000;  // keeps a mistyped flag from allocating gigabytes
constexpr std::uint32_t kMaxBlockSize = 65536;    // hybrid models' padded blocks reach thousands of tokens

bool positive(double v) {
  return v > 0;
}

// The hybrid and dtype fields, and the pool they resolve to.
Result<void> validate_cache(const EngineConfig& c) {
  const auto& t = c.time;
  if (!(t.kv_dtype_bytes >= 0 && t.kv_dtype_bytes <= 8) ||
      !(t.model_weight_bytes >= 0 && t.model_weight_bytes <= 1e15)) {
    return make_error("kv_dtype_bytes must be in [0, 8] and model_weight_bytes in [0, 1e15]",
                      "kv_dtype_bytes");
  }
  if (!(t.linear_state_bytes >= 0 && t.linear_state_bytes <= 1e12)) {
    return make_error("linear_state_bytes must be in [0, 1e12]", "linear_state_bytes");
  }
  if (t.num_linear_layers > 0 && t.num_linear_layers < t.num_layers) {
    return make_error(
        "a hybrid model needs at least as many linear layers as full-attention ones (num_layers)",
        "num_linear_layers");
  }
  const CacheLayout layout = cache_layout(c);
  if (layout.block_size > kMaxBlockSize) {
    return make_error("the linear state's page makes blocks of " + std::to_string(layout.block_size) +
                          " tokens, over " + std::to_string(kMaxBlockSize),
                      "linear_state_bytes");
  }
  if (layout.num_gpu_blocks < 1 || layout.num_gpu_blocks > kMaxBlocks) {
    return make_error(
        "the card leaves no room for the KV cache: gpu_memory_bytes x gpu_memory_utilization is "
        "below the weights plus memory_reserve_bytes plus one block",
        "num_gpu_blocks");
  }
  if (layout.state_blocks >= layout.num_gpu_blocks) {
    return make_error("the pool holds no more blocks than one sequence's linear state takes",
                      "num_gpu_blocks");
  }
  return {};
}

}  // namespace

Result<void> validate(const EngineConfig& c) {
  if (c.block_size < 1 || c.block_size > kMaxBlockSize) {
    return make_error("block_size must be in [1, " + std::to_string(kMaxBlockSize) + "]", "block_size");
  }
  if (c.num_gpu_blocks > kMaxBlocks) {
    return make_error("num_gpu_blocks must be in [1, " + std::to_string(kMaxBlocks) + "]", "num_gpu_blocks");
  }
  if (!(c.kv_cache_memory_bytes >= 0 && c.kv_cache_memory_bytes <= 1e15)) {
    return make_error("kv_cache_memory_bytes must be in [0, 1e15]", "kv_cache_memory_bytes");
  }
  if (c.num_gpu_blocks == 0 && !(c.gpu_memory_bytes > 0) && !(c.kv_cache_memory_bytes > 0)) {
    return make_error(
        "num_gpu_blocks must be at least 1 (0 sizes the pool from gpu_memory_bytes, which is not set)",
        "num_gpu_blocks");
  }
  if (!(c.gpu_memory_bytes >= 0 && c.gpu_memory_bytes <= 1e15) ||
      !(c.memory_reserve_bytes >= 0 && c.memory_reserve_bytes <= 1e15)) {
    return make_error("gpu_memory_bytes and memory_reserve_bytes must be in [0, 1e15]", "gpu_memory_bytes");
  }
  if (c.max_num_seqs < 1) {
    return make_error("max_num_seqs must be at least 1", "max_num_seqs");
  }
  if (c.max_num_batched_tokens < 1) {
    return make_error("max_num_batched_tokens must be at least 1", "max_num_batched_tokens");
  }
  if (c.max_model_len < 2) {
    return make_error("max_model_len must be at least 2", "max_model_len");
  }
  if (c.reserve_full_prompt > 1) {
    return make_error("reserve_full_prompt must be 0 or 1", "reserve_full_prompt");
  }
  if (!(c.kv_watermark >= 0 && c.kv_watermark < 1)) {
    return make_error("kv_watermark must be in [0, 1)", "kv_watermark");
  }
  if (!(c.kv_offloading_size >= 0 && c.kv_offloading_size <= 1e6)) {
    return make_error("kv_offloading_size must be in [0, 1e6] GiB", "kv_offloading_size");
  }
  if (!(c.gpu_memory_utilization > 0 && c.gpu_memory_utilization <= 1)) {
    return make_error("gpu_memory_utilization must be in (0, 1]", "gpu_memory_utilization");
  }
  if (!(c.reply.median >= 0 && c.reply.median <= 1e9)) {
    return make_error("reply_median must be in [0, 1e9] tokens", "reply_median");
  }
  if (!(c.reply.sigma >= 0 && c.reply.sigma <= 10)) {
    return make_error("reply_sigma must be in [0, 10]", "reply_sigma");
  }
  if (!(c.tools.rounds >= 0 && c.tools.rounds <= 50)) {
    return make_error("tool_rounds must be in [0, 50]", "tool_rounds");
  }
  if (!(c.tools.parallel >= 0 && c.tools.parallel <= 1) ||
      !(c.tools.subagent >= 0 && c.tools.subagent <= 1)) {
    return make_error("tool_parallel and tool_subagent are probabilities in [0, 1]", "tool_parallel");
  }
  const auto& t = c.time;
  if (!(t.num_params >= 0) || t.num_layers < 1 || t.num_q_heads < 1 || t.num_kv_heads < 1 || t.head_dim < 1 ||
      !positive(t.dtype_bytes)) {
    return make_error("model architecture parameters must be positive", "num_layers");
  }
  if (!positive(t.mem_bandwidth) || !positive(t.peak_flops) || !positive(t.pcie_bandwidth)) {
    return make_error("mem_bandwidth, peak_flops and pcie_bandwidth must be positive", "mem_bandwidth");
  }
  if (!(t.mem_efficiency > 0 && t.mem_efficiency <= 1) ||
      !(t.compute_efficiency > 0 && t.compute_efficiency <= 1)) {
    return make_error("mem_efficiency and compute_efficiency must be in (0, 1]", "mem_efficiency");
  }
  if (!(t.step_overhead >= 0) || !(t.per_seq_overhead >= 0)) {
    return make_error("step_overhead and per_seq_overhead must be >= 0", "step_overhead");
  }
  return validate_cache(c);
}

}  // namespace warden::engine
