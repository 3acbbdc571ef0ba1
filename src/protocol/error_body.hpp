#pragma once
// Error bodies in each client's own format (the gateway never answers an Anthropic client in OpenAI's).
//   OpenAI:    {"error":{"message":"...","type":"invalid_request_error","param":null,"code":null}}
//   Anthropic: {"type":"error","error":{"type":"invalid_request_error","message":"..."}}
// Every OpenAI-shaped body anywhere (the gateway's, its admin API's, the HTTP server's own, the sim's
// vLLM-style ones) is built by openai_error_body().

#include "protocol/api.hpp"
#include "protocol/error.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace warden::protocol {

enum class ErrorFormat { openai, anthropic };

constexpr ErrorFormat error_format_for(ApiKind k) noexcept {
  return is_anthropic(k) ? ErrorFormat::anthropic : ErrorFormat::openai;
}

/// OpenAI's error type for an HTTP status, the one table of every OpenAI-shaped error the warden answers
/// (the proxy's, the HTTP server's and the admin API's; the sim keeps vLLM's, below): 401
/// authentication_error, 403 permission_error, 429 rate_limit_error, any 5xx server_error, any other 4xx
/// invalid_request_error (OpenAI's own 404s, an unknown model or path, are invalid_request_error with a
/// code; not_found_error and overloaded_error are Anthropic's).
std::string_view openai_error_type(int status) noexcept;

/// Anthropic error type: 400 invalid_request_error, 401 authentication_error, 403 permission_error,
/// 404 not_found_error, 413 request_too_large, 429 rate_limit_error, 500/502 api_error,
/// 503/529 overloaded_error, 504 timeout_error (other 4xx invalid_request_error, other 5xx api_error).
std::string_view anthropic_error_type(int status) noexcept;

/// vLLM's error type for an HTTP status, as its ErrorResponse names them: 404 NotFoundError,
/// 413 RequestEntityTooLarge, 5xx InternalServerError, other BadRequestError.
std::string_view vllm_error_type(int status) noexcept;

/// The members of an OpenAI-shaped error body, written in this order.
struct OpenAiError {
  std::string_view message;
  std::string_view type;
  std::string_view param;      // "param": null when empty
  std::string_view code;       // "code": a string, null when empty
  int status_code = 0;         // when non-zero, "code" is this number instead (vLLM: the HTTP status)
  bool param_and_code = true;  // false: "message" and "type" only
};

/// {"error":{"message":..,"type":..,"param":..,"code":..}}, strings written by json_quote().
std::string openai_error_body(const OpenAiError& e);

/// The JSON error body for `status` with `message` (escaped as needed). `code` is OpenAI's "code"
/// member (null if empty); Anthropic has no code and ignores it.
std::string format_error(ErrorFormat format, int status, std::string_view message,
                         std::string_view code = {});

inline std::string format_error(ApiKind api, int status, std::string_view message,
                                std::string_view code = {}) {
  return format_error(error_format_for(api), status, message, code);
}

/// The message of an error body in any of the shapes engines and APIs answer with: `error.message`
/// (OpenAI, Anthropic, vLLM) or a top-level `message` (vLLM's older ErrorResponse); nullopt otherwise.
std::optional<std::string> error_message(std::string_view body);

/// `s` as a JSON string literal with quotes: escapes '"', '\\' and control characters, and replaces
/// bytes that are not valid UTF-8 with U+FFFD, so the result is always valid JSON.
std::string json_quote(std::string_view s);

/// A human-readable message for a request-inspection error (e.g. "request body is not valid JSON").
std::string_view describe(Errc e) noexcept;

}  // namespace warden::protocol
