// The warden's configuration (`lm-warden serve --config FILE.yaml`): parsed and validated once at start.
// Every error names the file, the line, what is wrong and what was expected (docs/config.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/parse.hpp"
#include "base/result.hpp"
#include "core/outlier.hpp"
#include "core/types.hpp"
#include "core/work_class.hpp"
#include "net/tls_context.hpp"
#include "supervisor/launch.hpp"

namespace warden::gateway {

// An upstream base URL split into what the HTTP client needs.
struct UpstreamUrl {
  std::string host;
  std::uint16_t port = 0;
  bool tls = false;       // https://: verified with the configuration's upstream_tls
  std::string base_path;  // "" or "/prefix" without a trailing slash
  std::string text;       // as written, normalised without a trailing slash

  friend bool operator==(const UpstreamUrl&, const UpstreamUrl&) = default;
};

// What a reload takes from a model's entry for the model's new requests (ModelRuntime::update_entry()).
struct ModelEntry {
  std::string served_model_name;  // what the engine is called; defaults to name
  // Every knob from `routing:` (parse_routing), max_num_seqs (per rank) from the model's entry.
  core::RoutingConfig routing;
  // Lower max_tokens so prompt + output fits the engine's context (docs/api.md, "Request rewriting").
  bool fit_max_tokens = true;
  // Drop Claude Code's per-conversation billing block before forwarding (docs/session-identity.md).
  bool normalize_prompt = true;

  friend bool operator==(const ModelEntry&, const ModelEntry&) = default;
};

// One replica's (one DP rank's) KV cache event publisher: vLLM's endpoint and replay_endpoint, as the
// warden connects to them (tcp://HOST:PORT; docs/config.md, "kv_events").
struct KvEventsEndpoint {
  std::string endpoint;
  std::string replay_endpoint;  // empty: none (a gap cannot be replayed: the replica's index is cleared)

  friend bool operator==(const KvEventsEndpoint&, const KvEventsEndpoint&) = default;
};

// A model's `kv_events:`: where each replica's engine publishes what its prefix cache holds, and how the
// warden judges that the stream still says everything (docs/config.md). Off when absent, except for
// engines the warden launches (it picks the ports and passes them on the command line).
struct KvEventsConfig {
  bool enabled = false;
  // The warden picks the ports at start (engines it launches): `first_port` and `endpoints` are then
  // filled by the gateway (publishers on first_port + replica, replays after them).
  bool launched = false;
  std::uint16_t first_port = 0;
  std::vector<KvEventsEndpoint> endpoints;  // one per replica, in replica order
  std::string topic;                        // a ZMQ subscription prefix; "" = every message
  // A replica whose engine computed prompt tokens while no batch came for this long is no longer believed.
  std::chrono::milliseconds stale_after{5000};
  // How long a replay may take before the gap is judged lost.
  std::chrono::milliseconds replay_timeout{2000};

  // What the file says: the ports the warden picked for its engines are not a change.
  friend bool operator==(const KvEventsConfig& a, const KvEventsConfig& b) {
    return a.enabled == b.enabled && a.launched == b.launched && a.topic == b.topic &&
           a.stale_after == b.stale_after && a.replay_timeout == b.replay_timeout &&
           (a.launched || a.endpoints == b.endpoints);
  }
};

// Where a model's replicas are, and the engines the warden starts for them: a reload relays the replicas
// of a model without a launch: section (ModelRuntime::relay()); any other change waits for a restart.
struct ModelReplicas {
  // Exactly one of the two replica layouts.
  bool data_parallel = false;
  UpstreamUrl dp_url;             // data_parallel: one server, `dp_size` ranks pinned by header
  int dp_size = 0;                //
  std::vector<UpstreamUrl> urls;  // otherwise: one server per replica
  std::optional<supervisor::LaunchSpec> launch;  // engines the warden starts itself (docs/engines.md)
  KvEventsConfig kv_events;

  friend bool operator==(const ModelReplicas&, const ModelReplicas&) = default;
};

// A model's entry: its name (how a reload matches it), the two groups a reload compares whole, and where
// it was written. Nothing else.
struct ModelConfig : ModelEntry, ModelReplicas {
  std::string name;  // what clients put in "model"
  int line = 0;      // where the entry starts in the file (for later messages)

  int replica_count() const { return data_parallel ? dp_size : static_cast<int>(urls.size()); }
  // The URL serving replica `index` (the same URL for every rank in DP mode).
  const UpstreamUrl& replica_url(int index) const;
};

struct TimeoutsConfig {
  std::chrono::milliseconds connect{5000};
  // Prefill of a 50k-token prompt on a busy replica can take minutes before the first byte.
  std::chrono::milliseconds first_byte{600000};
  std::chrono::milliseconds idle{300000};  // between two chunks of a streamed response

  friend bool operator==(const TimeoutsConfig&, const TimeoutsConfig&) = default;
};

struct MetricsConfig {
  std::chrono::milliseconds scrape_interval{1000};
  std::chrono::milliseconds scrape_timeout{2000};
  int unhealthy_after = 3;  // consecutive failed scrapes or connects

  friend bool operator==(const MetricsConfig&, const MetricsConfig&) = default;
};

struct AuthConfig {
  // Reads (/api/*, /metrics, /v1/models) need one of the api_keys or the admin token, like writes. Unset
  // in the file: true when api_keys are (an operator who keys the API keys the view of its sessions too).
  bool reads = false;

  friend bool operator==(const AuthConfig&, const AuthConfig&) = default;
};

// `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]` split into what the client needs.
struct RedisUrl {
  std::string host;
  std::uint16_t port = 6379;
  int db = 0;
  std::string user;      // empty: AUTH with the password alone
  std::string password;  // empty: no AUTH
  std::string text;      // without the password (for logs)

  friend bool operator==(const RedisUrl&, const RedisUrl&) = default;
};

// `state: { redis: ..., prefix: ... }`: conversation homes and replica load shared with the other wardens in
// front of the same replicas (docs/deployment.md). Absent: the warden routes on its own.
struct SharedStateConfig {
  RedisUrl redis;
  std::string prefix = "lm-warden:";
  // The longest a request waits for Redis (a lookup, or the claim of a new conversation's home); past it
  // the warden routes with what it knows itself.
  std::chrono::milliseconds lookup_timeout{5};
  // Waited for by the Redis thread only, never by a request.
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds command_timeout{500};

  friend bool operator==(const SharedStateConfig&, const SharedStateConfig&) = default;
};

// `tls: {cert_file, key_file}`: the listener speaks HTTPS; both files are read again at every reload.
struct ListenerTlsConfig {
  std::string cert_file;  // PEM certificate chain
  std::string key_file;   // PEM private key
  std::string at;         // "FILE:LINE:COL" of the section, for the files' errors (tls_files.hpp)
  std::shared_ptr<net::TlsContext> context;  // the files loaded by load_tls_files()

  // The same files (where they were named and what was loaded from them aside).
  friend bool operator==(const ListenerTlsConfig& a, const ListenerTlsConfig& b) {
    return a.cert_file == b.cert_file && a.key_file == b.key_file;
  }
};

// `upstream_tls: {ca_file, cert_file, key_file}`: how https:// replicas are verified, and the client
// certificate shown to them. Every key is optional (CAs: the system's store).
struct UpstreamTlsConfig {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string at;
  std::shared_ptr<net::TlsContext> context;  // load_tls_files(); null when no replica is https://

  friend bool operator==(const UpstreamTlsConfig& a, const UpstreamTlsConfig& b) {
    return a.ca_file == b.ca_file && a.cert_file == b.cert_file && a.key_file == b.key_file;
  }
};

// The settings a reload applies (docs/config.md, "Reloading"): read for each new request or connection,
// so the running warden takes the file's values whole. A new setting goes here or in RestartSettings, and
// a reload compares each group whole: none is left out.
struct LiveSettings {
  std::optional<ListenerTlsConfig> tls;  // absent: plain HTTP (the files are read again at every reload)
  UpstreamTlsConfig upstream_tls;
  std::string admin_token;            // empty = admin changes refused
  std::vector<std::string> api_keys;  // empty = no client key needed
  AuthConfig auth;
  // Browsers (origin_guard.hpp): `Host` names accepted on a loopback listener besides the loopback's own,
  // and web origins whose pages may call the warden besides the console's.
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> allowed_origins;
  TimeoutsConfig timeouts;
  // When a replica that fails requests or stops making progress is taken out of routing (docs/config.md).
  core::OutlierConfig outlier;
  // `clients:` classes of work and tenants (core/work_class.hpp; docs/config.md).
  core::ClientRules clients;

  friend bool operator==(const LiveSettings&, const LiveSettings&) = default;
};

// The settings the listener, the poller and the stores are built with at start: a reload that finds one
// changed keeps the value in force and names it in restart_required.
struct RestartSettings {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8080;
  std::string state_dir = "./state";
  std::uint64_t max_body_bytes = 32ull * 1024 * 1024;
  // Overload bounds (docs/config.md): open client connections, and request bodies being read or handled.
  std::uint64_t max_connections = 4096;
  std::uint64_t max_inflight_body_bytes = 256ull * 1024 * 1024;  // 8 bodies at the limit, ~1,300 agent turns
  // SIGTERM/SIGINT/SIGQUIT: how long requests in flight may still finish. An agent turn streams for tens of
  // seconds; 30 s lets most end and matches Kubernetes' default termination grace (its SIGKILL after).
  std::chrono::milliseconds shutdown_grace{30000};
  std::chrono::seconds stats_retention{7200};
  MetricsConfig metrics;
  std::optional<SharedStateConfig> shared_state;

  friend bool operator==(const RestartSettings&, const RestartSettings&) = default;
};

// The whole file: the two groups of settings, the models (each compared by a reload on its own:
// reload_plan.hpp) and where it came from. Nothing else: a setting belongs to one of the groups.
struct Config : RestartSettings, LiveSettings {
  std::string source;  // file name the config came from (for messages)
  std::vector<ModelConfig> models;

  const ModelConfig* find_model(std::string_view name) const;
};

// How a reload takes a key of the file's top level (docs/config.md, "Reloading").
enum class OnReload {
  applied,  // for new requests and connections
  restart,  // kept as it is in force until a restart, and named
  models,   // compared model by model (reload_plan.hpp)
};

// A key of the file's top level as a reload sees it: one entry of the table that reads the file.
struct FileKey {
  OnReload on_reload = OnReload::applied;
  // Whether two configurations agree on the key (null for models).
  bool (*same)(const Config&, const Config&) = nullptr;
  // A restart key's value in force, as a reload names it.
  std::string (*in_force)(const Config&) = nullptr;
  // What a reload calls a change of it, when not the key's name.
  const char* what = nullptr;
  std::string_view name;  // the key
};

// The keys of the file's top level, in the order the file is read (config.cpp's table).
std::span<const FileKey> file_keys();

// A mapping of the file and its keys, each in its table's order: "" the top level, "metrics",
// "models[].kv_events" (docs/config.md is checked against them).
struct FileSection {
  std::string path;
  std::vector<std::string> keys;
};
std::vector<FileSection> file_sections();

struct ConfigError {
  std::string message;  // "FILE:LINE:COL: what is wrong; expected ..."
};

// Parses YAML text; `source` names it in errors. Line numbers in errors are 1-based.
struct ConfigResult {
  std::optional<Config> config;
  std::vector<ConfigError> errors;  // all problems found, in file order
  bool ok() const { return config.has_value(); }
  std::string error_text() const;  // errors joined by newlines
};
ConfigResult parse_config(std::string_view yaml_text, std::string_view source);
ConfigResult load_config_file(const std::string& path);

// "HOST:PORT" (IPv6 as "[::1]:8080") → host, port. Used by `--listen`.
std::optional<std::pair<std::string, std::uint16_t>> parse_listen(std::string_view text);
// The configuration's duration ("500ms", "1s", "2m", "1h") and size ("32MiB", "10MB") syntax.
using base::parse_duration;
using base::parse_size;
// "http://host:port[/base]" or "https://..." → UpstreamUrl, or why it is not usable.
base::Result<UpstreamUrl> parse_upstream_url(std::string_view text);
// "redis://..." → RedisUrl, or why it is not usable.
base::Result<RedisUrl> parse_redis_url(std::string_view text);

}  // namespace warden::gateway
