// The KV cache's geometry as vLLM derives it from the model and the card: tokens per block, blocks in
// the pool, and the blocks a running sequence's linear-attention state takes (hybrid models).
//
// Dense model: blocks of block_size tokens, each block_size * kv_bytes_per_token bytes.
//
// Hybrid model (StepTimeModel::num_linear_layers > 0, e.g. Qwen3.5 / 3.6: 48 Gated DeltaNet layers and
// 16 full-attention ones): vLLM's hybrid allocator keeps every layer in one pool of equal pages
// (vllm/v1/core/kv_cache_utils.py): the full-attention layers form one group, the linear layers groups of
// as many layers, and a block of the pool is one page in each layer of a group. A linear layer's page
// holds one sequence's state, so vLLM grows the attention block until its page holds that state
// (Platform._align_hybrid_block_size, vllm/platforms/interface.py):
//   align = max(16, block_size)
//   block_size' = max(block_size, align * ceil(linear_state_bytes / (align * attn_page_per_token)))
//   attn_page_per_token = 2 * num_kv_heads * head_dim * kv bytes   (one layer's K and V of one token)
// and pads the state page to the attention page. A running sequence then holds one block in each linear
// group for its state: ceil(num_linear_layers / num_layers) blocks. Prefix hits count whole blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/config.hpp"
#include "engine/step_time.hpp"

namespace warden::engine {

struct CacheLayout {
  std::uint32_t block_size = 0;      // tokens per block
  std::uint32_t num_gpu_blocks = 0;  // blocks in the pool; 0 when the card leaves no room for one
  std::uint32_t state_blocks = 0;    // blocks a running sequence's linear state holds (0: dense model)
  double block_bytes = 0;            // bytes of one block over every layer of its group
};

// Tokens per block for a block size asked of vLLM (its --block-size): the same for a dense model, padded
// to the linear state's page for a hybrid one.
std::uint32_t hybrid_block_size(std::uint32_t requested, const StepTimeModel& model);

// Blocks a running sequence's linear-attention state holds: one per group of linear layers.
std::uint32_t state_blocks_per_seq(const StepTimeModel& model);

// KV blocks that fit a GPU after weights and an activation reserve, as vLLM's memory profiling sizes the
// cache: floor((gpu_bytes * utilization - weight_bytes - reserve_bytes) / (block_size * kv_bytes_per_token)).
std::uint32_t derive_num_gpu_blocks(double gpu_bytes, double utilization, double reserve_bytes,
                                    std::uint32_t block_size, const StepTimeModel& model);

// The geometry of `config`: the pool is kv_cache_memory_bytes of whole blocks when set, else
// num_gpu_blocks, else (0) what the card's memory holds.
CacheLayout cache_layout(const EngineConfig& config);

// Blocks kv_offloading_size GiB of host memory holds (vLLM sizes its CPU block pool the same way): whole
// blocks of the attention layers' KV, block_size as the engine runs with it.
std::size_t offload_capacity_blocks(const EngineConfig& config);

// vLLM's cache_dtype label for the KV element size: "auto" (the model's dtype), "fp8", "bfloat16".
std::string_view kv_cache_dtype_name(const StepTimeModel& model);

// Bytes of one layer's page (vLLM's mamba_page_size_padded for a hybrid model; 0 for a dense one).
double padded_state_page_bytes(const EngineConfig& config);

// `config` with block_size and num_gpu_blocks as vLLM resolves them (what an engine runs with).
// Idempotent.
EngineConfig resolve_cache(EngineConfig config);

}  // namespace warden::engine
