#pragma once
// Which client API a request speaks; decides request inspection, usage parsing and error format.

#include <optional>
#include <string_view>

namespace warden::protocol {

enum class ApiKind {
  openai_chat,             // POST /v1/chat/completions
  openai_completions,      // POST /v1/completions
  openai_responses,        // POST /v1/responses
  anthropic_messages,      // POST /v1/messages
  anthropic_count_tokens,  // POST /v1/messages/count_tokens
};

/// Maps a request target to its API. The query string and one trailing slash are ignored
/// (Claude Code sends "/v1/messages?beta=true"). Returns nullopt for anything else
/// (e.g. /v1/models, /health are not body-carrying inference APIs).
std::optional<ApiKind> api_kind_from_path(std::string_view target) noexcept;

/// True for the two Anthropic-style APIs (error format, usage format).
constexpr bool is_anthropic(ApiKind k) noexcept {
  return k == ApiKind::anthropic_messages || k == ApiKind::anthropic_count_tokens;
}

/// "openai_chat", "anthropic_messages", ...
std::string_view to_string(ApiKind k) noexcept;

}  // namespace warden::protocol
