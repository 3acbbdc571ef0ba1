// The `launch:` section of a model entry (docs/engines.md) and the pure functions that turn it into
// the command lines of the engine processes the warden starts. No processes here: everything is
// deterministic and golden-tested; the Supervisor (supervisor.hpp) runs what these functions build.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace YAML {
class Node;
}  // namespace YAML

namespace warden::supervisor {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// When an engine that exited is started again, and when the warden gives up on it.
struct RestartPolicy {
  std::chrono::milliseconds initial_backoff{1000};  // first restart delay; doubles per consecutive failure
  std::chrono::milliseconds max_backoff{60000};
  // An engine that stayed ready this long before exiting starts again from initial_backoff.
  std::chrono::milliseconds stable_after{60000};
  // Consecutive runs that never became ready (exited or no /health in time) before the status is `failed`.
  int max_start_failures = 3;

  friend bool operator==(const RestartPolicy&, const RestartPolicy&) = default;
};

enum class EngineKind { vllm, command };

struct LaunchSpec {
  EngineKind kind = EngineKind::command;
  // kind == command: the argv template (argv[0] = program, searched in PATH if it has no '/').
  std::vector<std::string> command;
  // kind == vllm:
  std::string executable = "vllm";
  std::string model;  // `vllm serve MODEL`; empty = the model's served_model_name
  int tensor_parallel_size = 1;
  std::string host;               // --host; empty = the host of the replica URL
  std::vector<std::string> args;  // appended to the generated flags
  // Both kinds: added to (or replacing in) the warden's own environment.
  EnvList env;
  std::string health_path = "/health";
  std::chrono::milliseconds health_timeout{600000};  // loading a model can take minutes
  std::chrono::milliseconds stop_grace{10000};       // SIGTERM → SIGKILL
  std::size_t log_lines = 1000;                      // ring buffer of captured output per engine
  RestartPolicy restart;

  friend bool operator==(const LaunchSpec&, const LaunchSpec&) = default;
};

// One engine process the warden runs for a model: the facts its command line is built from.
struct EngineTarget {
  std::string model;              // the warden's model name (what clients send)
  std::string served_model_name;  // --served-model-name
  int max_num_seqs = 256;
  int data_parallel_size = 1;  // ranks behind this process
  std::vector<int> replicas;   // the model's replica indexes this process serves
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string base_path;      // of the replica URL ("" or "/prefix"); health is read below it
  std::string warden_binary;  // value of ${WARDEN_BINARY}
  // KV cache events (the model's kv_events:): the first rank publishes on this port, rank r on port + r,
  // replays likewise from kv_replay_port; 0 = no events.
  std::uint16_t kv_events_port = 0;
  std::uint16_t kv_replay_port = 0;
  // The value of vLLM's --kv-events-config (and of ${KV_EVENTS_CONFIG}): "{}" without events.
  std::string kv_events_config() const;
  std::string name() const;  // "model" or "model[replica]" when one process serves one of several replicas
  int replica_index() const { return replicas.empty() ? 0 : replicas.front(); }
};

// A model entry as far as launching goes (the gateway fills this from its ModelConfig).
struct ModelLayout {
  struct Url {
    std::string host;
    std::uint16_t port = 0;
    std::string base_path;
    std::uint16_t kv_events_port = 0;  // EngineTarget's
    std::uint16_t kv_replay_port = 0;
  };
  std::string name;
  std::string served_model_name;
  int max_num_seqs = 256;
  bool data_parallel = false;  // true: one process with `dp_size` ranks at urls[0]
  int dp_size = 1;
  std::vector<Url> urls;  // data_parallel: exactly one; otherwise one per replica (one process each)
};

// One process per distinct URL: data_parallel → one target with all ranks; urls → one per replica.
std::vector<EngineTarget> engine_targets(const ModelLayout& model, const std::string& warden_binary);

struct CommandLine {
  std::vector<std::string> argv;  // argv[0] as configured (PATH lookup happens at spawn)
  EnvList env;                    // added to the warden's environment
  // Shell-like rendering for logs and the admin API ('quoted' where needed), with secrets redacted: every
  // env value, and the value of every flag named like a secret (is_secret_name: --api-key X,
  // --hf-token=X).
  std::string display() const;
  // The secret values display() hides (flag values, and values of env variables named like a secret),
  // for scrubbing them from the engine's own output as well.
  std::vector<std::string> secrets() const;
};

// Whether a flag or variable name ("--api-key", "HF_TOKEN", "--db-password") names a secret: one of its
// words (split at '-' and '_') ends in key, token, secret, password or passwd. "--max-num-batched-tokens"
// and "--tokenizer" do not.
bool is_secret_name(std::string_view name);

// The argv/env of the engine for `target` (placeholders substituted, vllm flags generated).
CommandLine build_command(const LaunchSpec& spec, const EngineTarget& target);

// Placeholders usable in command, args and env values: ${PORT} ${HOST} ${REPLICA} ${DP_SIZE}
// ${MAX_NUM_SEQS} ${SERVED_MODEL_NAME} ${MODEL} ${WARDEN_BINARY} ${KV_EVENTS_CONFIG}; "$$" is a literal "$".
// Returns the text with them replaced, or why not (unknown name, unclosed "${").
base::Result<std::string> substitute(std::string_view text, const EngineTarget& target);
// Whether the engines `spec` starts are told where to publish KV cache events: always for engine: vllm
// (the warden adds --kv-events-config), for a command only through ${KV_EVENTS_CONFIG}.
bool passes_kv_events(const LaunchSpec& spec);
// Checks a template without a target (config validation): nothing, or why it is wrong.
base::Result<void> check_placeholders(std::string_view text);

// Parses a `launch:` mapping. Every problem goes to `error(node, message)` in the gateway's config
// style ("models[0].launch.command must be ..."); returns std::nullopt if there was any.
struct LaunchParseContext {
  std::function<void(const YAML::Node&, const std::string&)> error;
};
std::optional<LaunchSpec> parse_launch(const YAML::Node& node, const std::string& where,
                                       const LaunchParseContext& ctx);

// The path of the running executable (/proc/self/exe resolved), used for ${WARDEN_BINARY}: the serve
// process launches its own binary's `sim` subcommand without depending on PATH or the working directory.
std::string self_executable();

}  // namespace warden::supervisor
