#include "sim/cache_info.hpp"

#include <fmt/format.h>

#include "engine/cache_layout.hpp"

namespace warden::sim {

namespace {

// A float as Python's str() writes it: 16.0, 0.95.
std::string python_float(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".en") == std::string::npos) {
    s += ".0";
  }
  return s;
}

}  // namespace

std::string cache_config_labels(const engine::EngineConfig& config, int engine) {
  const engine::CacheLayout layout = engine::cache_layout(config);
  // A hybrid model's padded state page, as vLLM's CacheConfig carries it.
  const double page = engine::padded_state_page_bytes(config);
  return fmt::format(
      "block_size=\"{}\",cache_dtype=\"{}\",enable_prefix_caching=\"True\",engine=\"{}\","
      "gpu_memory_utilization=\"{}\",kv_cache_memory_bytes=\"{}\",kv_offloading_size=\"{}\",{}"
      "num_cpu_blocks=\"0\",num_gpu_blocks=\"{}\"",
      layout.block_size, engine::kv_cache_dtype_name(config.time), engine,
      python_float(config.gpu_memory_utilization),
      config.kv_cache_memory_bytes > 0 ? fmt::format("{:.0f}", config.kv_cache_memory_bytes) : "None",
      config.kv_offloading_size > 0 ? python_float(config.kv_offloading_size) : "None",
      page > 0 ? fmt::format("mamba_page_size_padded=\"{:.0f}\",", page) : "", layout.num_gpu_blocks);
}

}  // namespace warden::sim
