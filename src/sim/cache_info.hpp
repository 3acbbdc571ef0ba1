// The labels of vllm:cache_config_info for one rank: the cache config as the engine runs it (vLLM writes
// every CacheConfig field as a string, unset ones as "None"). The warden reads the block size and pool
// (a replica's KV capacity) and the host offload from them: kv_offloading_size GiB at the pool's bytes per
// token when kv_cache_memory_bytes is given. num_cpu_blocks is 0, as vLLM V1 sets it whatever it offloads.
#pragma once

#include <string>

#include "engine/config.hpp"

namespace warden::sim {

// `block_size="1568",cache_dtype="fp8",...,num_gpu_blocks="107"` (no braces), labels in name order.
std::string cache_config_labels(const engine::EngineConfig& config, int engine);

}  // namespace warden::sim
