// Thread identity: which thread of its session a request belongs to. Agents are trees of threads (the main
// thread and the subagents it starts, concurrently), and each thread has its own history, so its own
// prompt and its own place in a replica's cache.
//
// Thread id, first match wins (RequestInfo::thread_source records which):
//   1 header X-Warden-Thread         (explicit, any client)
//   2 header X-Claude-Code-Agent-Id  (Claude Code subagents; its main thread sends none)
//   3 header thread-id, then thread_id (Codex: a sub-agent's own thread; the id of the session's first
//                                       thread is its session id, which is the main thread here)
// Parent, when a header names one: X-Claude-Code-Parent-Agent-Id, then x-codex-parent-thread-id.
// Ids are trimmed and hashed past 256 bytes like session keys. Without a session key there is no thread.
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t by value
#include <xxhash.h>

#include "protocol/request.hpp"

namespace warden::protocol {

namespace {

// The hash of thread `id` of the session `info` names: the session's own hash for its main thread.
std::uint64_t thread_hash(const RequestInfo& info, const std::string& id) {
  if (id.empty() || id == info.session_key) {
    return info.session_hash;
  }
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, info.session_key.data(), info.session_key.size());
  const char separator = '\0';  // keys never contain NUL (headers cannot), so no two pairs collide
  XXH3_64bits_update(&state, &separator, 1);
  XXH3_64bits_update(&state, id.data(), id.size());
  return XXH3_64bits_digest(&state);
}

// The first header of `names` with a non-empty value, as a key.
template <std::size_t N>
std::optional<std::string> first_key(const HeaderLookup& headers, const std::string_view (&names)[N]) {
  for (const std::string_view name : names) {
    if (const auto v = headers.find(name)) {
      if (auto key = normalize_key(*v)) {
        return key;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(ThreadSource s) noexcept {
  switch (s) {
    case ThreadSource::main:
      return "main";
    case ThreadSource::warden_header:
      return "warden_header";
    case ThreadSource::claude_code_agent:
      return "claude_code_agent";
    case ThreadSource::codex_thread:
      return "codex_thread";
  }
  return "main";
}

void read_thread(const HeaderLookup& headers, RequestInfo& info) {
  info.thread_id.clear();
  info.thread_source = ThreadSource::main;
  info.thread_hash = info.session_hash;
  info.parent_hash = 0;
  if (info.session_source == SessionSource::none) {
    return;
  }
  static constexpr std::pair<std::string_view, ThreadSource> sources[] = {
      {"x-warden-thread", ThreadSource::warden_header},
      {"x-claude-code-agent-id", ThreadSource::claude_code_agent},
      {"thread-id", ThreadSource::codex_thread},
      {"thread_id", ThreadSource::codex_thread},
  };
  for (const auto& [name, source] : sources) {
    if (const auto v = headers.find(name)) {
      if (auto key = normalize_key(*v); key && *key != info.session_key) {
        info.thread_id = std::move(*key);
        info.thread_source = source;
        break;
      }
      if (source == ThreadSource::codex_thread) {
        break;  // Codex names its first thread by the session id: the main thread
      }
    }
  }
  info.thread_hash = thread_hash(info, info.thread_id);
  static constexpr std::string_view parents[] = {"x-claude-code-parent-agent-id", "x-codex-parent-thread-id"};
  if (const auto parent = first_key(headers, parents)) {
    info.parent_hash = thread_hash(info, *parent);
  } else if (!info.thread_id.empty()) {
    info.parent_hash = info.session_hash;  // a first-level subagent: the main thread started it
  }
}

}  // namespace warden::protocol
