// Named engine configurations and the key/value setter shared by --preset-file YAML and CLI flags.
//
// Presets (derivations in docs/engine-model.md):
// - "a4000-qwen3-4b": RTX A4000 16 GiB, Qwen3-4B bf16. 2,500 blocks of 16 (40k tokens of KV),
//   max_num_seqs 32, max_num_batched_tokens 2048, max_model_len 32768 (40960 would not fit in 40k tokens
//   of KV, which vLLM refuses at startup). Cold prefill ~4-5k tokens/s; ~34 ms per token for one
//   sequence at a 10k context.
// - "h200-qwen3-4b": H200 141 GB, Qwen3-4B. max_num_seqs 256, max_num_batched_tokens 8192,
//   max_model_len 262144.
// - "instant": 0.1 ms steps whatever the batch, a large cache; for functional tests and proxy benchmarks.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/cache_layout.hpp"
#include "engine/config.hpp"
#include "engine/result.hpp"

namespace warden::engine {

std::optional<EngineConfig> find_preset(std::string_view name);
std::vector<std::string> preset_names();

// Sets one parameter by name from its text value. Names are the EngineConfig / StepTimeModel field names;
// '-' and '_' are interchangeable, so CLI flags ("--num-gpu-blocks 2000" -> set_param(c,
// "num-gpu-blocks", "2000")) and YAML keys share this path. Unknown names and unparsable values are
// errors naming the key. Does not run validate().
Result<void> set_param(EngineConfig& config, std::string_view key, std::string_view value);

// Every name set_param accepts (underscore form), for help texts.
std::vector<std::string> param_names();

// Applies a YAML mapping of parameter: value onto `base` and validates the result. An optional
// `preset: NAME` key first replaces the base with that preset. Pure: text in, config out; unknown keys,
// non-scalar values and YAML syntax errors are errors.
Result<EngineConfig> parse_preset_yaml(std::string_view yaml, EngineConfig base);

// The config as YAML parse_preset_yaml reads back (every parameter, flat).
std::string to_yaml(const EngineConfig& config);

}  // namespace warden::engine
