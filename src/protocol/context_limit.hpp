#pragma once
// The context length of a model and what to do about a request that does not fit it, without I/O:
//   - the figure vLLM serves per model in GET /v1/models ("max_model_len");
//   - the figures in vLLM's 400 for a request over the context, to retry with an output that fits;
//   - the output cap that makes prompt + output fit;
//   - the error a client understands for a prompt that alone is over the context: Anthropic's own
//     "prompt is too long: N tokens > M maximum" (Claude Code compacts on it), OpenAI's
//     context_length_exceeded with the "maximum context length" wording.

#include "protocol/api.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warden::protocol {

/// "max_model_len" of the entry of a /v1/models body whose "id" is `served_model_name` (or, if none has
/// that id, of the only entry); nullopt if absent, not a positive integer, or the body is not a model list.
std::optional<std::int64_t> max_model_len_from_models(std::string_view body,
                                                      std::string_view served_model_name);

/// What vLLM's context-length error says.
struct ContextOverflow {
  std::int64_t max_model_len = 0;
  std::int64_t input_tokens = 0;
  /// The prompt alone does not fit: no output cap helps.
  bool prompt_too_long() const noexcept { return input_tokens >= max_model_len; }
};

/// Reads the figures from an engine's error body (found anywhere in it, whatever its JSON shape):
///   "... maximum context length is M tokens ... N input tokens ..." (vLLM's over-long request, with
///     "your request has N input tokens" or "your prompt contains at least N input tokens"), and
///   "... (length N) is longer than the maximum model length of M" (vLLM's over-long prompt).
/// nullopt for any other error.
std::optional<ContextOverflow> parse_context_overflow(std::string_view body);

/// The output limit that lets a prompt of `prompt_tokens` fit `max_model_len`, at least 1.
std::int64_t fitting_max_tokens(std::int64_t max_model_len, std::int64_t prompt_tokens) noexcept;

/// The message of the 400 for a prompt of `prompt_tokens` over `max_model_len`, in the API's own wording
/// (the body: format_error(api, 400, message, kContextLengthExceeded)).
std::string prompt_too_long_message(ApiKind api, std::int64_t prompt_tokens, std::int64_t max_model_len);
/// OpenAI's error code for it (Anthropic bodies have no code).
inline constexpr std::string_view kContextLengthExceeded = "context_length_exceeded";

}  // namespace warden::protocol
