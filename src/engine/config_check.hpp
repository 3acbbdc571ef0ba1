#pragma once
// Whether an engine configuration can run: every size, rate and probability in range, and the KV cache pool
// its card and model resolve to (engine/cache_layout.hpp). Apart from config.hpp, which cache_layout reads.

#include "engine/config.hpp"
#include "engine/result.hpp"

namespace warden::engine {

// Consistency checks (all sizes > 0, block_size <= max_num_batched_tokens, efficiencies in (0,1], ...).
Result<void> validate(const EngineConfig& config);

}  // namespace warden::engine
