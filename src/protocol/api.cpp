#include "protocol/api.hpp"

namespace warden::protocol {

std::optional<ApiKind> api_kind_from_path(std::string_view target) noexcept {
  if (auto q = target.find_first_of("?#"); q != std::string_view::npos) {
    target = target.substr(0, q);
  }
  if (target.size() > 1 && target.back() == '/') {
    target.remove_suffix(1);
  }
  if (target == "/v1/chat/completions") {
    return ApiKind::openai_chat;
  }
  if (target == "/v1/completions") {
    return ApiKind::openai_completions;
  }
  if (target == "/v1/responses") {
    return ApiKind::openai_responses;
  }
  if (target == "/v1/messages") {
    return ApiKind::anthropic_messages;
  }
  if (target == "/v1/messages/count_tokens") {
    return ApiKind::anthropic_count_tokens;
  }
  return std::nullopt;
}

std::string_view to_string(ApiKind k) noexcept {
  switch (k) {
    case ApiKind::openai_chat:
      return "openai_chat";
    case ApiKind::openai_completions:
      return "openai_completions";
    case ApiKind::openai_responses:
      return "openai_responses";
    case ApiKind::anthropic_messages:
      return "anthropic_messages";
    case ApiKind::anthropic_count_tokens:
      return "anthropic_count_tokens";
  }
  return "unknown";
}

}  // namespace warden::protocol
