// What the warden remembers about one finished request: logged, counted in /metrics and in the stats store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace warden::gateway {

struct RequestRecord {
  std::string model;     // the client's model name ("" when the request never named a known model)
  std::string endpoint;  // "/v1/chat/completions", ...
  int replica = -1;      // -1: no replica was chosen
  std::string route;     // new|sticky|spilled|pinned|balanced|failover|queued|rehomed, "" when not routed
  std::string thread;    // "main", a subagent's id, "" (no session, or a side request: no thread)
  std::string session_source;  // where the session key came from ("header:x-claude-code-session-id", ...)
  std::string work_class;      // "interactive" or "headless" (core/work_class.hpp); "" before it is told
  std::string tenant;          // the tenant's name (clients: in the config file), "" for none
  int status = 0;              // HTTP status sent to the client (499 = client went away)
  bool stream = false;
  // As the engine reported them; std::nullopt = not reported. Missing cached counts as computed.
  std::optional<std::int64_t> prompt_tokens;
  std::optional<std::int64_t> cached_tokens;
  std::optional<std::int64_t> completion_tokens;
  std::optional<double> ttfb_s;  // first response byte relayed to the client
  std::string stream_break;  // a stream cut off after its first byte: engine|timeout|filter|shutdown|stalled
                             // ("" if not)
  double duration_s = 0;
  std::optional<double> queued_s;  // how long admission held it back (std::nullopt: not held)
  // The cached tokens the warden expected on the chosen replica (core::Decision::expected_cached_tokens),
  // from its KV cache events when `expected_exact`, and that replica's block size (0 = unknown).
  std::optional<std::uint32_t> expected_cached;
  bool expected_exact = false;
  std::uint32_t expected_block = 0;

  std::int64_t prompt_cached() const { return cached_tokens.value_or(0); }
  std::int64_t prompt_computed() const {
    std::int64_t p = prompt_tokens.value_or(0) - prompt_cached();
    return p > 0 ? p : 0;
  }
};

}  // namespace warden::gateway
