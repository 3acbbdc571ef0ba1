#include <fmt/core.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "app/cli.hpp"
#include "engine/config_check.hpp"
#include "engine/presets.hpp"
#include "sim/sim.hpp"

namespace warden::app {

namespace {

struct SimArgs {
  sim::SimOptions opts;
  std::string preset = "a4000-qwen3-4b";
  std::string preset_file;
  std::map<std::string, std::string> engine_params;  // parameter name -> value, only those given
  std::string kv_offloading_backend;                 // vLLM's flag, accepted for its one modelled value
  bool enable_prefix_caching = true;                 // vLLM's flag, accepted: the sim always caches
  bool print_config = false;
  std::string log_level = "info";
  std::string kv_events_config;  // vLLM's --kv-events-config JSON
  std::string kv_events_encoding = "tagged_map";
};

// The flags vLLM has, with vLLM's help; every other engine parameter (engine::param_names()) gets a flag
// of its name. `--num-gpu-blocks` is also vLLM's `--num-gpu-blocks-override`. Given twice, the last wins.
const std::map<std::string_view, std::string_view> kEngineFlagHelp = {
    {"max_num_seqs", "Running requests per rank (overrides the preset)"},
    {"num_gpu_blocks", "KV blocks per rank (overrides the preset's, or its sizing from the card)"},
    {"block_size", "Tokens per KV block asked (a hybrid model pads it to its linear state's page)"},
    {"max_num_batched_tokens", "Token budget per step"},
    {"max_model_len", "Prompt + output limit per request"},
    {"kv_cache_dtype", "KV cache dtype: auto (the model's), bfloat16, fp8, fp8_e4m3, fp8_e5m2"},
    {"gpu_memory_utilization",
     "Fraction of the card's memory vLLM takes (sizes the pool of a preset sized "
     "from the card)"},
    {"kv_cache_memory_bytes",
     "Bytes of the KV cache pool (vLLM's --kv-cache-memory-bytes: replaces the sizing "
     "from the card and --num-gpu-blocks; reported in vllm:cache_config_info)"},
    {"scheduling_policy",
     "fcfs, or priority: requests' `priority` orders the waiting queue and picks who "
     "is preempted"},
    {"reply_median",
     "Median reply length in tokens, where replies end by themselves (0 = always max_tokens)"},
    {"reply_sigma", "Spread of reply lengths: sigma of ln(length)"},
    {"tool_rounds",
     "Answer requests that offer tools with tool calls: mean tool rounds per prompt (0 = off)"},
    {"tool_parallel", "Probability that a round holds several tool calls"},
    {"tool_subagent", "Probability that a prompt starts with a subagent"},
    {"kv_offloading_size",
     "GiB of host memory per rank for vLLM's native CPU KV offload (0 = off): evicted "
     "prefixes are loaded back over PCIe instead of recomputed"},
};

// One flag per engine parameter, over the preset's value.
void add_engine_flags(CLI::App& cmd, const std::shared_ptr<SimArgs>& args) {
  for (const std::string& name : engine::param_names()) {
    std::string flags = "--" + name;
    std::replace(flags.begin(), flags.end(), '_', '-');
    if (name == "num_gpu_blocks") {
      flags += ",--num-gpu-blocks-override";
    }
    const auto help = kEngineFlagHelp.find(name);
    cmd.add_option_function<std::string>(
           flags, [args, name](const std::string& v) { args->engine_params[name] = v; },
           help != kEngineFlagHelp.end() ? std::string(help->second) : "Engine parameter " + name)
        ->group(help != kEngineFlagHelp.end() ? "Engine" : "Engine model")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // as vLLM's argparse: the last one wins
  }
}

// Preset, then the preset file, then the individual flags (later wins). Exits 2 on a bad configuration.
engine::EngineConfig build_config(const SimArgs& a) {
  auto base = engine::find_preset(a.preset);
  if (!base) {
    std::string names;
    for (const auto& n : engine::preset_names()) {
      names += (names.empty() ? "" : ", ") + n;
    }
    fmt::print(stderr, "lm-warden sim: unknown preset '{}' (known: {})\n", a.preset, names);
    std::exit(2);
  }
  engine::EngineConfig c = *base;
  if (!a.preset_file.empty()) {
    std::ifstream in(a.preset_file);
    if (!in) {
      fmt::print(stderr, "lm-warden sim: cannot read preset file '{}'\n", a.preset_file);
      std::exit(2);
    }
    std::stringstream ss;
    ss << in.rdbuf();
    auto parsed = engine::parse_preset_yaml(ss.str(), c);
    if (!parsed) {
      fmt::print(stderr, "lm-warden sim: {}: {}\n", a.preset_file, parsed.error().message);
      std::exit(2);
    }
    c = *parsed;
  }
  for (const auto& [key, value] : a.engine_params) {
    if (auto r = engine::set_param(c, key, value); !r) {
      fmt::print(stderr, "lm-warden sim: --{}: {}\n", key, r.error().message);
      std::exit(2);
    }
  }
  if (auto v = engine::validate(c); !v) {
    fmt::print(stderr, "lm-warden sim: invalid engine configuration: {}\n", v.error().message);
    std::exit(2);
  }
  return c;
}

// `--kv-events-config` as vLLM reads it, and the encoding switch. Exits 2 on a bad configuration.
sim::KvEventsConfig build_kv_events(const SimArgs& a) {
  sim::KvEventsConfig c;
  if (!a.kv_events_config.empty()) {
    auto parsed = sim::parse_kv_events_config(a.kv_events_config);
    if (!parsed) {
      fmt::print(stderr, "lm-warden sim: --kv-events-config: {}\n", parsed.error());
      std::exit(2);
    }
    c = *parsed;
  }
  c.encoding =
      a.kv_events_encoding == "array" ? protocol::kv::Encoding::array : protocol::kv::Encoding::tagged_map;
  return c;
}

void add_kv_events_options(CLI::App& cmd, SimArgs& args) {
  cmd.add_option("--kv-events-config", args.kv_events_config,
                 "vLLM's KV cache events config (JSON: enable_kv_cache_events, publisher, endpoint, "
                 "replay_endpoint, buffer_steps, hwm, topic): each rank publishes over ZMQ")
      ->group("KV cache events");
  cmd.add_option("--kv-events-encoding", args.kv_events_encoding,
                 "tagged_map (vLLM's msgspec maps, today's) or array (the older positional arrays)")
      ->check(CLI::IsMember({"tagged_map", "array"}))
      ->group("KV cache events");
}

}  // namespace

void add_sim_command(CLI::App& app) {
  auto args = std::make_shared<SimArgs>();
  auto* cmd = app.add_subcommand("sim", "Run a vLLM-compatible engine simulator (N data-parallel ranks)");
  auto& o = args->opts;
  cmd->add_option("--port", o.port, "Port to listen on (0 = any free port; the real one is printed)")
      ->default_val(8000);
  cmd->add_option("--host", o.host, "Address to bind")->default_val("127.0.0.1");
  cmd->add_option("--data-parallel-size,-d,--dp", o.data_parallel_size, "Engine ranks behind this server")
      ->default_val(1)
      ->check(CLI::Range(1, 256));
  cmd->add_option("--preset", args->preset,
                  fmt::format("Engine preset: {}", fmt::join(engine::preset_names(), ", ")))
      ->default_val("a4000-qwen3-4b");
  cmd->add_option("--preset-file", args->preset_file, "YAML of engine parameters applied over the preset");
  cmd->add_option("--time-scale", o.time_scale, "Model seconds per wall second (10 = ten times faster)")
      ->default_val(1.0)
      ->check(CLI::Range(1e-3, 1e6));
  cmd->add_option("--served-model-name", o.served_model_name, "Model name clients must send")
      ->default_val("Qwen/Qwen3-4B-Instruct-2507");
  add_engine_flags(*cmd, args);
  cmd->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", args->enable_prefix_caching,
                "vLLM's flag, accepted on (its default): the sim always caches prefixes");
  cmd->add_flag(
      "--print-config", args->print_config,
      "Print the engine configuration as it would run (YAML, block size and pool resolved) and exit");
  cmd->add_option("--kv-offloading-backend", args->kv_offloading_backend,
                  "vLLM's offload backend; the one modelled is native (vLLM's own CPU offload)")
      ->check(CLI::IsMember({"native"}));
  cmd->add_option("--seed", o.seed, "Seed for output text, ids and balancer choices")->default_val(0);
  cmd->add_option("--api-server-count", o.api_server_count,
                  "Balancer instances (vLLM API server processes); default = data-parallel size")
      ->check(CLI::Range(0, 1024));
  add_vllm_balancer_option(*cmd, o.vllm_balancer);
  cmd->add_option("--max-body-bytes", o.max_body_bytes, "Largest request body (413 above)")
      ->default_val(32u << 20);
  cmd->add_option("--ssl-certfile", o.ssl_certfile, "PEM certificate: serve HTTPS (as vllm serve)");
  cmd->add_option("--ssl-keyfile", o.ssl_keyfile, "PEM private key of --ssl-certfile");
  cmd->add_option("--log-level", args->log_level, "trace, debug, info, warn, error, off")
      ->default_val("info");
  add_kv_events_options(*cmd, *args);
  cmd->callback([args] {
    // stdout carries exactly one line (the listening line); logs go to stderr.
    auto logger = spdlog::stderr_color_mt("sim");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(args->log_level));
    args->opts.engine = build_config(*args);
    args->opts.kv_events = build_kv_events(*args);
    if (args->print_config) {
      fmt::print("{}", engine::to_yaml(engine::resolve_cache(args->opts.engine)));
      return;
    }
    if (!args->enable_prefix_caching) {
      fmt::print(stderr,
                 "lm-warden sim: --no-enable-prefix-caching is not modelled (the sim always caches)\n");
      std::exit(2);
    }
    int rc = sim::run_sim(args->opts);
    std::fflush(stdout);
    if (rc != 0) {
      std::exit(rc);
    }
  });
}

}  // namespace warden::app
