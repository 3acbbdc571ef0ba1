#include "engine/presets.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <sstream>

#include "base/parse.hpp"
#include "base/trim.hpp"
#include "engine/config_check.hpp"

namespace warden::engine {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// An agent's turn is mostly a tool call or a few sentences, now and then a long file edit: a median of
// 250 tokens, p10 ~70, p90 ~900, p99 ~2,600 (docs/engine-model.md).
constexpr ReplyLength kAgentReplies{250, 1.0};

EngineConfig a4000_qwen3_4b() {
  EngineConfig c;
  c.preset = "a4000-qwen3-4b";
  c.time = StepTimeModel{};  // Qwen3-4B on an RTX A4000 (the defaults)
  c.block_size = 16;
  // 16 GiB x 0.9 - 8.04 GB weights - ~1.52 GB activations/graphs = ~5.9 GB of KV = 2,500 blocks.
  c.num_gpu_blocks = derive_num_gpu_blocks(16 * kGiB, 0.9, 1.5225e9, c.block_size, c.time);
  c.max_num_seqs = 32;
  c.max_num_batched_tokens = 2048;
  // 40,960 (Qwen3-4B's native window) does not fit in 40k tokens of KV; vLLM would refuse to start.
  c.max_model_len = 32768;
  c.reply = kAgentReplies;
  return c;
}

EngineConfig h200_qwen3_4b() {
  EngineConfig c;
  c.preset = "h200-qwen3-4b";
  c.time.mem_bandwidth = 4.8e12;
  c.time.peak_flops = 989e12;
  c.time.step_overhead = 0.0025;
  c.block_size = 16;
  // 141 GB x 0.9 - 8.04 GB weights - ~6 GB activations (8192 batched tokens, graphs) = ~113 GB of KV.
  c.num_gpu_blocks = derive_num_gpu_blocks(141e9, 0.9, 6e9, c.block_size, c.time);
  c.max_num_seqs = 256;
  c.max_num_batched_tokens = 8192;
  c.max_model_len = 262144;
  c.reply = kAgentReplies;
  return c;
}

// One RTX 5090 running Qwen3.6-27B (NVFP4 weights, fp8 KV) with vLLM's rtx_5090 recipe line:
// --max-model-len 131072 --max-num-seqs 4 --kv-cache-dtype fp8 --max-num-batched-tokens 4096
// --gpu-memory-utilization 0.95 --enable-prefix-caching. Sources and derivations: docs/engine-model.md.
EngineConfig rtx5090_qwen36_27b() {
  EngineConfig c;
  c.preset = "rtx5090-qwen3.6-27b";
  auto& t = c.time;
  // 64 layers = 16 x (3 Gated DeltaNet + 1 full attention); full attention 24 Q / 4 KV heads of 256.
  t.num_params = 27e9;
  t.num_layers = 16;
  t.num_q_heads = 24;
  t.num_kv_heads = 4;
  t.head_dim = 256;
  t.dtype_bytes = 2;               // bf16 activations: the KV dtype under --kv-cache-dtype auto
  t.kv_dtype_bytes = 1;            // --kv-cache-dtype fp8: 32,768 B of KV per token
  t.model_weight_bytes = 23.8e9;   // the NVFP4 build on the card (22-25 GB)
  t.num_linear_layers = 48;        // Gated DeltaNet: 16 K / 48 V heads of 128, conv kernel 4
  t.linear_state_bytes = 3207168;  // 48 x 128 x 128 fp32 SSM state + 3 x 10,240 bf16 conv state
  // RTX 5090: 1,792 GB/s GDDR7, 209.5 dense bf16 TFLOPS, PCIe 5.0 x16 (64 GB/s peak).
  t.mem_bandwidth = 1.792e12;
  t.mem_efficiency = 0.85;
  t.peak_flops = 209.5e12;
  t.compute_efficiency = 0.85;
  t.pcie_bandwidth = 48e9;
  // vLLM sees 31.4 GiB; x 0.95 - 23.8 GB weights - 2.5 GiB activations, graphs and non-torch memory
  // = 5.5 GB = 107 blocks of 1,568 tokens (51.4 MB each): 167,776 tokens, 149k of them beside the state
  // of 4 running sequences.
  c.gpu_memory_bytes = 31.4 * kGiB;
  c.gpu_memory_utilization = 0.95;
  c.memory_reserve_bytes = 2.5 * kGiB;
  c.num_gpu_blocks = 0;  // sized from the card, as vLLM does
  c.block_size = 16;     // vLLM pads it to 1,568 (fp8) or 784 (bf16) tokens: engine/cache_layout.hpp
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 4096;
  c.max_model_len = 131072;
  c.reply = kAgentReplies;
  return c;
}

EngineConfig instant() {
  EngineConfig c;
  c.preset = "instant";
  c.time.mem_bandwidth = 1e18;
  c.time.peak_flops = 1e21;
  c.time.step_overhead = 1e-4;
  c.block_size = 16;
  c.num_gpu_blocks = 262144;  // 4M tokens: effectively never evicts in functional tests
  c.max_num_seqs = 256;
  c.max_num_batched_tokens = 65536;
  c.max_model_len = 262144;
  return c;
}

struct Param {
  std::string_view name;
  std::uint32_t& (*u32)(EngineConfig&);
  double& (*f64)(EngineConfig&);
};

// Every settable parameter, in the order to_yaml writes them.
const Param kParams[] = {
    {"block_size", [](EngineConfig& c) -> std::uint32_t& { return c.block_size; }, nullptr},
    {"num_gpu_blocks", [](EngineConfig& c) -> std::uint32_t& { return c.num_gpu_blocks; }, nullptr},
    {"max_num_seqs", [](EngineConfig& c) -> std::uint32_t& { return c.max_num_seqs; }, nullptr},
    {"max_num_batched_tokens", [](EngineConfig& c) -> std::uint32_t& { return c.max_num_batched_tokens; },
     nullptr},
    {"max_model_len", [](EngineConfig& c) -> std::uint32_t& { return c.max_model_len; }, nullptr},
    {"reserve_full_prompt", [](EngineConfig& c) -> std::uint32_t& { return c.reserve_full_prompt; }, nullptr},
    {"kv_watermark", nullptr, [](EngineConfig& c) -> double& { return c.kv_watermark; }},
    {"kv_offloading_size", nullptr, [](EngineConfig& c) -> double& { return c.kv_offloading_size; }},
    {"gpu_memory_utilization", nullptr, [](EngineConfig& c) -> double& { return c.gpu_memory_utilization; }},
    {"gpu_memory_bytes", nullptr, [](EngineConfig& c) -> double& { return c.gpu_memory_bytes; }},
    {"memory_reserve_bytes", nullptr, [](EngineConfig& c) -> double& { return c.memory_reserve_bytes; }},
    {"kv_cache_memory_bytes", nullptr, [](EngineConfig& c) -> double& { return c.kv_cache_memory_bytes; }},
    {"reply_median", nullptr, [](EngineConfig& c) -> double& { return c.reply.median; }},
    {"reply_sigma", nullptr, [](EngineConfig& c) -> double& { return c.reply.sigma; }},
    {"tool_rounds", nullptr, [](EngineConfig& c) -> double& { return c.tools.rounds; }},
    {"tool_parallel", nullptr, [](EngineConfig& c) -> double& { return c.tools.parallel; }},
    {"tool_subagent", nullptr, [](EngineConfig& c) -> double& { return c.tools.subagent; }},
    {"num_params", nullptr, [](EngineConfig& c) -> double& { return c.time.num_params; }},
    {"num_layers", [](EngineConfig& c) -> std::uint32_t& { return c.time.num_layers; }, nullptr},
    {"num_q_heads", [](EngineConfig& c) -> std::uint32_t& { return c.time.num_q_heads; }, nullptr},
    {"num_kv_heads", [](EngineConfig& c) -> std::uint32_t& { return c.time.num_kv_heads; }, nullptr},
    {"head_dim", [](EngineConfig& c) -> std::uint32_t& { return c.time.head_dim; }, nullptr},
    {"dtype_bytes", nullptr, [](EngineConfig& c) -> double& { return c.time.dtype_bytes; }},
    {"kv_dtype_bytes", nullptr, [](EngineConfig& c) -> double& { return c.time.kv_dtype_bytes; }},
    {"model_weight_bytes", nullptr, [](EngineConfig& c) -> double& { return c.time.model_weight_bytes; }},
    {"num_linear_layers", [](EngineConfig& c) -> std::uint32_t& { return c.time.num_linear_layers; },
     nullptr},
    {"linear_state_bytes", nullptr, [](EngineConfig& c) -> double& { return c.time.linear_state_bytes; }},
    {"mem_bandwidth", nullptr, [](EngineConfig& c) -> double& { return c.time.mem_bandwidth; }},
    {"mem_efficiency", nullptr, [](EngineConfig& c) -> double& { return c.time.mem_efficiency; }},
    {"peak_flops", nullptr, [](EngineConfig& c) -> double& { return c.time.peak_flops; }},
    {"compute_efficiency", nullptr, [](EngineConfig& c) -> double& { return c.time.compute_efficiency; }},
    {"step_overhead", nullptr, [](EngineConfig& c) -> double& { return c.time.step_overhead; }},
    {"pcie_bandwidth", nullptr, [](EngineConfig& c) -> double& { return c.time.pcie_bandwidth; }},
    {"per_seq_overhead", nullptr, [](EngineConfig& c) -> double& { return c.time.per_seq_overhead; }},
};

// The parameters that are words, not numbers: vLLM's --scheduling-policy, and its --kv-cache-dtype (an
// alias that sets kv_dtype_bytes: auto = the model's dtype, 0).
constexpr std::string_view kSchedulingPolicy = "scheduling_policy";
constexpr std::string_view kKvCacheDtype = "kv_cache_dtype";

std::optional<double> kv_dtype_bytes_of(std::string_view dtype) {
  if (dtype == "auto") {
    return 0.0;
  }
  if (dtype == "bfloat16" || dtype == "float16" || dtype == "half") {
    return 2.0;
  }
  if (dtype == "fp8" || dtype == "fp8_e4m3" || dtype == "fp8_e5m2") {
    return 1.0;
  }
  return std::nullopt;
}

std::string normalize(std::string_view key) {
  std::string k(key);
  for (char& ch : k) {
    if (ch == '-') {
      ch = '_';
    }
  }
  return k;
}

}  // namespace

std::optional<EngineConfig> find_preset(std::string_view name) {
  if (name == "a4000-qwen3-4b") {
    return a4000_qwen3_4b();
  }
  if (name == "h200-qwen3-4b") {
    return h200_qwen3_4b();
  }
  if (name == "rtx5090-qwen3.6-27b") {
    return rtx5090_qwen36_27b();
  }
  if (name == "instant") {
    return instant();
  }
  return std::nullopt;
}

std::vector<std::string> preset_names() {
  return {"a4000-qwen3-4b", "h200-qwen3-4b", "rtx5090-qwen3.6-27b", "instant"};
}

std::vector<std::string> param_names() {
  std::vector<std::string> out;
  for (const auto& p : kParams) {
    out.emplace_back(p.name);
  }
  out.emplace_back(kSchedulingPolicy);
  out.emplace_back(kKvCacheDtype);
  return out;
}

Result<void> set_param(EngineConfig& config, std::string_view key, std::string_view value) {
  const std::string k = normalize(key);
  const std::string_view v = base::trim(value);
  if (k == kSchedulingPolicy) {
    const auto policy = parse_scheduling_policy(v);
    if (!policy) {
      return make_error("'" + k + "' needs fcfs or priority, got '" + std::string(v) + "'", k);
    }
    config.scheduling_policy = *policy;
    return {};
  }
  if (k == kKvCacheDtype) {
    const auto bytes = kv_dtype_bytes_of(v);
    if (!bytes) {
      return make_error("'" + k + "' needs auto, bfloat16, float16, fp8, fp8_e4m3 or fp8_e5m2, got '" +
                            std::string(v) + "'",
                        k);
    }
    config.time.kv_dtype_bytes = *bytes;
    return {};
  }
  for (const auto& p : kParams) {
    if (p.name != k) {
      continue;
    }
    if (p.u32 != nullptr) {
      const auto n = base::parse_integer<std::uint32_t>(v);
      if (!n) {
        return make_error("'" + k + "' needs a non-negative integer, got '" + std::string(v) + "'", k);
      }
      p.u32(config) = *n;
    } else {
      double d = 0;
      const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
      if (ec != std::errc{} || ptr != v.data() + v.size() || v.empty() || !std::isfinite(d)) {
        return make_error("'" + k + "' needs a number, got '" + std::string(v) + "'", k);
      }
      p.f64(config) = d;
    }
    return {};
  }
  return make_error("unknown engine parameter '" + std::string(key) + "'", std::string(key));
}

Result<EngineConfig> parse_preset_yaml(std::string_view yaml, EngineConfig base) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return make_error(std::string("preset file: ") + e.what());
  }
  if (root.IsNull()) {
    auto ok = validate(base);
    if (!ok) {
      return ok.error();
    }
    return base;
  }
  if (!root.IsMap()) {
    return make_error("preset file: expected a mapping of parameter: value");
  }
  // `preset:` picks the base before any other key applies, wherever it appears.
  if (const auto p = root["preset"]; p && p.IsScalar()) {
    auto found = find_preset(p.Scalar());
    if (!found) {
      return make_error("preset file: unknown preset '" + p.Scalar() + "'", "preset");
    }
    base = std::move(*found);
  }
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) {
      return make_error("preset file: keys must be scalars");
    }
    const std::string key = kv.first.Scalar();
    if (!kv.second.IsScalar()) {
      return make_error("preset file: '" + key + "' needs a scalar value", key);
    }
    if (key == "preset") {
      continue;
    }
    if (key == "name") {
      base.preset = kv.second.Scalar();
      continue;
    }
    auto r = set_param(base, key, kv.second.Scalar());
    if (!r) {
      return Error{"preset file: " + r.error().message, r.error().param};
    }
  }
  auto ok = validate(base);
  if (!ok) {
    return Error{"preset file: " + ok.error().message, ok.error().param};
  }
  return base;
}

std::string to_yaml(const EngineConfig& config) {
  std::ostringstream out;
  out.precision(17);
  EngineConfig c = config;  // the accessors are shared with set_param and take a mutable config
  out << "name: " << config.preset << "\n";
  for (const auto& p : kParams) {
    out << p.name << ": ";
    if (p.u32 != nullptr) {
      out << p.u32(c);
    } else {
      out << p.f64(c);
    }
    out << "\n";
  }
  out << kSchedulingPolicy << ": " << scheduling_policy_name(config.scheduling_policy) << "\n";
  return out.str();
}

}  // namespace warden::engine
