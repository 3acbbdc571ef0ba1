#include <fmt/core.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "app/cli.hpp"
#include "engine/presets.hpp"
#include "sim/sim.hpp"

namespace warden::app {

namespace {

struct SimArgs {
  sim::SimOptions opts;
  std::string preset = "a4000-qwen3-4b";
  std::string preset_file;
  std::uint32_t max_num_seqs = 0;
  std::uint32_t num_gpu_blocks = 0;
  std::uint32_t block_size = 0;
  std::uint32_t max_num_batched_tokens = 0;
  std::uint32_t max_model_len = 0;
  std::string scheduling_policy;  // empty: the preset's (fcfs)
  std::string reply_median;       // empty: the preset's
  std::string reply_sigma;
  std::string tool_rounds;  // empty: the preset's (off)
  std::string tool_parallel;
  std::string tool_subagent;
  std::string kv_offloading_size;     // empty: the preset's (off)
  std::string kv_offloading_backend;  // vLLM's flag, accepted for its one modelled value
  std::string log_level = "info";
};

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
  auto set = [&](std::string_view key, std::uint32_t v) {
    if (v == 0) {
      return;
    }
    auto r = engine::set_param(c, key, std::to_string(v));
    if (!r) {
      fmt::print(stderr, "lm-warden sim: --{}: {}\n", key, r.error().message);
      std::exit(2);
    }
  };
  set("max-num-seqs", a.max_num_seqs);
  set("num-gpu-blocks", a.num_gpu_blocks);
  set("block-size", a.block_size);
  set("max-num-batched-tokens", a.max_num_batched_tokens);
  set("max-model-len", a.max_model_len);
  for (const auto& [key, text] : {std::pair{"scheduling-policy", &a.scheduling_policy},
                                  {"reply-median", &a.reply_median},
                                  {"reply-sigma", &a.reply_sigma},
                                  {"tool-rounds", &a.tool_rounds},
                                  {"tool-parallel", &a.tool_parallel},
                                  {"tool-subagent", &a.tool_subagent},
                                  {"kv-offloading-size", &a.kv_offloading_size}}) {
    if (text->empty()) {
      continue;
    }
    if (auto r = engine::set_param(c, key, *text); !r) {
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
  cmd->add_option("--preset", args->preset, "Engine preset: a4000-qwen3-4b, h200-qwen3-4b, instant")
      ->default_val("a4000-qwen3-4b");
  cmd->add_option("--preset-file", args->preset_file, "YAML of engine parameters applied over the preset");
  cmd->add_option("--time-scale", o.time_scale, "Model seconds per wall second (10 = ten times faster)")
      ->default_val(1.0)
      ->check(CLI::Range(1e-3, 1e6));
  cmd->add_option("--served-model-name", o.served_model_name, "Model name clients must send")
      ->default_val("Qwen/Qwen3-4B-Instruct-2507");
  cmd->add_option("--max-num-seqs", args->max_num_seqs, "Running requests per rank (overrides the preset)");
  cmd->add_option("--num-gpu-blocks", args->num_gpu_blocks, "KV blocks per rank (overrides the preset)");
  cmd->add_option("--block-size", args->block_size, "Tokens per KV block (overrides the preset)");
  cmd->add_option("--max-num-batched-tokens", args->max_num_batched_tokens, "Token budget per step");
  cmd->add_option("--max-model-len", args->max_model_len, "Prompt + output limit per request");
  cmd->add_option(
      "--scheduling-policy", args->scheduling_policy,
      "fcfs, or priority: requests' `priority` orders the waiting queue and picks who is preempted");
  cmd->add_option("--reply-median", args->reply_median,
                  "Median reply length in tokens, where replies end by themselves (0 = always max_tokens)");
  cmd->add_option("--reply-sigma", args->reply_sigma, "Spread of reply lengths: sigma of ln(length)");
  cmd->add_option("--tool-rounds", args->tool_rounds,
                  "Answer requests that offer tools with tool calls: mean tool rounds per prompt (0 = off)");
  cmd->add_option("--tool-parallel", args->tool_parallel,
                  "Probability that a round holds several tool calls");
  cmd->add_option("--tool-subagent", args->tool_subagent, "Probability that a prompt starts with a subagent");
  cmd->add_option("--kv-offloading-size", args->kv_offloading_size,
                  "GiB of host memory per rank for vLLM's native CPU KV offload (0 = off): evicted prefixes "
                  "are loaded back over PCIe instead of recomputed");
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
  cmd->callback([args] {
    // stdout carries exactly one line (the listening line); logs go to stderr.
    auto logger = spdlog::stderr_color_mt("sim");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(args->log_level));
    args->opts.engine = build_config(*args);
    int rc = sim::run_sim(args->opts);
    std::fflush(stdout);
    if (rc != 0) {
      std::exit(rc);
    }
  });
}

}  // namespace warden::app
