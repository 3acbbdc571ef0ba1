#include "engine/step_time.hpp"

#include <algorithm>

namespace warden::engine {

StepCost StepTimeModel::cost(std::span<const ScheduledChunk> batch) const {
  StepCost c;
  if (batch.empty()) {
    return c;
  }
  double new_tokens = 0;
  double kv_tokens = 0;
  double pairs = 0;
  for (const auto& chunk : batch) {
    const double n = chunk.new_tokens;
    const double ctx = chunk.context_tokens;
    new_tokens += n;
    // The step reads the context's KV and writes the new tokens' KV.
    kv_tokens += ctx + n;
    pairs += n * ctx + n * (n + 1) / 2;
  }
  // A hybrid model also reads and writes each scheduled sequence's recurrent state.
  const double state_bytes = 2.0 * state_bytes_per_seq() * static_cast<double>(batch.size());
  c.memory_s =
      (weight_bytes() + kv_bytes_per_token() * kv_tokens + state_bytes) / (mem_bandwidth * mem_efficiency);
  c.compute_s =
      (2.0 * num_params * new_tokens + attn_flops_per_pair() * pairs) / (peak_flops * compute_efficiency);
  c.total_s = step_overhead + per_seq_overhead * static_cast<double>(batch.size()) +
              std::max(c.memory_s, c.compute_s);
  return c;
}

}  // namespace warden::engine
