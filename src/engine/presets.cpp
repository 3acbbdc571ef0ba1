#include "engine/presets.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <sstream>

#include "base/parse.hpp"
#include "base/trim.hpp"

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
    {"mem_bandwidth", nullptr, [](EngineConfig& c) -> double& { return c.time.mem_bandwidth; }},
    {"mem_efficiency", nullptr, [](EngineConfig& c) -> double& { return c.time.mem_efficiency; }},
    {"peak_flops", nullptr, [](EngineConfig& c) -> double& { return c.time.peak_flops; }},
    {"compute_efficiency", nullptr, [](EngineConfig& c) -> double& { return c.time.compute_efficiency; }},
    {"step_overhead", nullptr, [](EngineConfig& c) -> double& { return c.time.step_overhead; }},
    {"pcie_bandwidth", nullptr, [](EngineConfig& c) -> double& { return c.time.pcie_bandwidth; }},
    {"per_seq_overhead", nullptr, [](EngineConfig& c) -> double& { return c.time.per_seq_overhead; }},
};

// The one parameter that is a word, not a number (vLLM's --scheduling-policy).
constexpr std::string_view kSchedulingPolicy = "scheduling_policy";

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

std::uint32_t derive_num_gpu_blocks(double gpu_bytes, double utilization, double reserve_bytes,
                                    std::uint32_t block_size, const StepTimeModel& model) {
  const double kv = gpu_bytes * utilization - model.weight_bytes() - reserve_bytes;
  const double per_block = static_cast<double>(block_size) * model.kv_bytes_per_token();
  if (!(kv > 0) || !(per_block > 0)) {
    return 0;
  }
  return static_cast<std::uint32_t>(std::floor(kv / per_block));
}

std::optional<EngineConfig> find_preset(std::string_view name) {
  if (name == "a4000-qwen3-4b") {
    return a4000_qwen3_4b();
  }
  if (name == "h200-qwen3-4b") {
    return h200_qwen3_4b();
  }
  if (name == "instant") {
    return instant();
  }
  return std::nullopt;
}

std::vector<std::string> preset_names() {
  return {"a4000-qwen3-4b", "h200-qwen3-4b", "instant"};
}

std::vector<std::string> param_names() {
  std::vector<std::string> out;
  for (const auto& p : kParams) {
    out.emplace_back(p.name);
  }
  out.emplace_back(kSchedulingPolicy);
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
