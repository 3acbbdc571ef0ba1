#include "engine/cache_layout.hpp"

#include <algorithm>
#include <cmath>

namespace warden::engine {

namespace {

// The smallest block size vLLM's attention kernels take (FlashAttention / FlashInfer: multiples of 16).
constexpr std::uint32_t kKernelBlockAlignment = 16;

bool hybrid(const StepTimeModel& m) {
  return m.num_linear_layers > 0 && m.linear_state_bytes > 0;
}

}  // namespace

std::uint32_t hybrid_block_size(std::uint32_t requested, const StepTimeModel& model) {
  if (!hybrid(model)) {
    return requested;
  }
  const double page_per_token = 2.0 * model.num_kv_heads * model.head_dim * model.kv_element_bytes();
  const double align = std::max(kKernelBlockAlignment, requested);
  const double blocks = std::ceil(model.linear_state_bytes / (align * page_per_token));
  const double padded = std::min(align * blocks, 1e9);
  return std::max(requested, static_cast<std::uint32_t>(padded));
}

std::uint32_t state_blocks_per_seq(const StepTimeModel& model) {
  if (!hybrid(model)) {
    return 0;
  }
  return (model.num_linear_layers + model.num_layers - 1) / model.num_layers;
}

std::uint32_t derive_num_gpu_blocks(double gpu_bytes, double utilization, double reserve_bytes,
                                    std::uint32_t block_size, const StepTimeModel& model) {
  const double kv = gpu_bytes * utilization - model.weight_bytes() - reserve_bytes;
  const double per_block = static_cast<double>(block_size) * model.kv_bytes_per_token();
  if (!(kv > 0) || !(per_block > 0)) {
    return 0;
  }
  return static_cast<std::uint32_t>(std::min(std::floor(kv / per_block), 4e9));
}

CacheLayout cache_layout(const EngineConfig& c) {
  CacheLayout l;
  l.block_size = hybrid_block_size(c.block_size, c.time);
  l.block_bytes = static_cast<double>(l.block_size) * c.time.kv_bytes_per_token();
  if (c.kv_cache_memory_bytes > 0) {
    l.num_gpu_blocks =
        static_cast<std::uint32_t>(std::min(std::floor(c.kv_cache_memory_bytes / l.block_bytes), 4e9));
  } else if (c.num_gpu_blocks > 0) {
    l.num_gpu_blocks = c.num_gpu_blocks;
  } else {
    l.num_gpu_blocks = derive_num_gpu_blocks(c.gpu_memory_bytes, c.gpu_memory_utilization,
                                             c.memory_reserve_bytes, l.block_size, c.time);
  }
  l.state_blocks = state_blocks_per_seq(c.time);
  return l;
}

std::size_t offload_capacity_blocks(const EngineConfig& config) {
  const CacheLayout l = cache_layout(config);
  return static_cast<std::size_t>(config.kv_offloading_size * 1073741824.0 / l.block_bytes);
}

std::string_view kv_cache_dtype_name(const StepTimeModel& model) {
  if (model.kv_dtype_bytes == 1) {
    return "fp8";
  }
  if (model.kv_dtype_bytes == 2) {
    return "bfloat16";
  }
  return "auto";
}

double padded_state_page_bytes(const EngineConfig& config) {
  if (!hybrid(config.time)) {
    return 0;
  }
  return cache_layout(config).block_bytes / config.time.num_layers;
}

EngineConfig resolve_cache(EngineConfig config) {
  const CacheLayout l = cache_layout(config);
  config.block_size = l.block_size;
  config.num_gpu_blocks = l.num_gpu_blocks;
  return config;
}

}  // namespace warden::engine
