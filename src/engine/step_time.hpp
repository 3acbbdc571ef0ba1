// How long one engine step takes on the modelled GPU: a roofline over the batch the scheduler built.
//
//   memory_s  = (weight_bytes + kv_bytes_per_token * sum(context + new tokens)
//                + 2 * state_bytes_per_seq * requests) / (mem_bandwidth * mem_efficiency)
//   compute_s = (2 * num_params * sum(new tokens) + attn_flops_per_pair * sum(pairs))
//               / (peak_flops * compute_efficiency)
//   pairs     = new * context + new * (new + 1) / 2      (causal attention of the new tokens)
//   step_s    = step_overhead + per_seq_overhead * requests + max(memory_s, compute_s)
//
// Decode-heavy steps are bound by reading the weights and every sequence's KV once; prefill-heavy steps by
// the matmul FLOPs. Derived sizes come from the architecture fields, so overriding num_layers, head_dim ...
// changes the KV footprint consistently. A hybrid model (num_linear_layers > 0: Qwen3-Next, Qwen3.5/3.6)
// keeps KV only in its num_layers full-attention layers; each linear-attention layer keeps a fixed
// recurrent state per sequence, read and written once per step (the 2 * state_bytes_per_seq term). See
// docs/engine-model.md for the a4000 / h200 derivations.
#pragma once

#include <cstdint>
#include <span>

namespace warden::engine {

// One request's share of a step: `new_tokens` computed on top of `context_tokens` already in its KV.
struct ScheduledChunk {
  std::uint32_t new_tokens = 0;
  std::uint32_t context_tokens = 0;
};

struct StepCost {
  double memory_s = 0;
  double compute_s = 0;
  double total_s = 0;
};

struct StepTimeModel {
  // Model architecture (defaults: Qwen3-4B).
  double num_params = 4.02e9;
  std::uint32_t num_layers = 36;
  std::uint32_t num_q_heads = 32;
  std::uint32_t num_kv_heads = 8;
  std::uint32_t head_dim = 128;
  double dtype_bytes = 2;  // bf16 weights and KV
  // Bytes per KV element when they differ from dtype_bytes (vLLM's --kv-cache-dtype: 1 for fp8, 2 for
  // bf16); 0 = dtype_bytes.
  double kv_dtype_bytes = 0;
  // Bytes of weights on the GPU and read once per step when they are not num_params * dtype_bytes (a
  // quantized checkpoint keeps some tensors in bf16); 0 = num_params * dtype_bytes.
  double model_weight_bytes = 0;
  // Hybrid models: linear-attention layers besides the num_layers full-attention ones, and the recurrent
  // state each keeps per sequence (conv + SSM state, bytes). 0 = a dense model.
  std::uint32_t num_linear_layers = 0;
  double linear_state_bytes = 0;

  // Hardware (defaults: RTX A4000).
  double mem_bandwidth = 448e9;  // bytes/s
  double mem_efficiency = 0.7;   // achieved fraction of peak bandwidth
  double peak_flops = 76.7e12;   // dense bf16 tensor FLOP/s
  double compute_efficiency = 0.6;
  double step_overhead = 0.0035;  // s per step: scheduling, launch, sampling, detokenize
  double pcie_bandwidth = 24e9;   // bytes/s achieved host -> GPU (PCIe 4.0 x16: 32 GB/s peak); KV offload
  double per_seq_overhead = 0;    // s per scheduled request

  double weight_bytes() const {
    return model_weight_bytes > 0 ? model_weight_bytes : num_params * dtype_bytes;
  }
  double kv_element_bytes() const { return kv_dtype_bytes > 0 ? kv_dtype_bytes : dtype_bytes; }
  // K and V for every (full-attention) layer and KV head.
  double kv_bytes_per_token() const {
    return 2.0 * num_layers * num_kv_heads * head_dim * kv_element_bytes();
  }
  // The recurrent state of one sequence over every linear-attention layer (0 for a dense model).
  double state_bytes_per_seq() const { return num_linear_layers * linear_state_bytes; }
  // QK^T and AV: 2 matmuls x 2 FLOP per multiply-add x query width, per (query, key) pair, all layers.
  double attn_flops_per_pair() const { return 4.0 * num_layers * num_q_heads * head_dim; }

  StepCost cost(std::span<const ScheduledChunk> batch) const;
  double step_seconds(std::span<const ScheduledChunk> batch) const { return cost(batch).total_s; }
};

}  // namespace warden::engine
