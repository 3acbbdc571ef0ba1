#include "protocol/context_limit.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <string>

namespace warden::protocol {

namespace {

// The decimal number starting at `at` (nullopt if none, or beyond 15 digits).
std::optional<std::int64_t> number_at(std::string_view s, std::size_t at) {
  std::int64_t v = 0;
  std::size_t n = 0;
  while (at + n < s.size() && s[at + n] >= '0' && s[at + n] <= '9' && n < 15) {
    v = v * 10 + (s[at + n] - '0');
    ++n;
  }
  if (n == 0) {
    return std::nullopt;
  }
  return v;
}

// The decimal number that ends just before `end`.
std::optional<std::int64_t> number_before(std::string_view s, std::size_t end) {
  std::size_t begin = end;
  while (begin > 0 && s[begin - 1] >= '0' && s[begin - 1] <= '9' && end - begin < 15) {
    --begin;
  }
  return number_at(s.substr(0, end), begin);
}

std::optional<ContextOverflow> over_long_request(std::string_view body) {
  constexpr std::string_view kLimit = "maximum context length is ";
  constexpr std::string_view kInput = " input tokens";
  const std::size_t limit_at = body.find(kLimit);
  if (limit_at == std::string_view::npos) {
    return std::nullopt;
  }
  const auto limit = number_at(body, limit_at + kLimit.size());
  const std::size_t input_at = body.find(kInput, limit_at);
  if (!limit || input_at == std::string_view::npos) {
    return std::nullopt;
  }
  const auto input = number_before(body, input_at);
  if (!input) {
    return std::nullopt;
  }
  return ContextOverflow{*limit, *input};
}

std::optional<ContextOverflow> over_long_prompt(std::string_view body) {
  constexpr std::string_view kLimit = "is longer than the maximum model length of ";
  constexpr std::string_view kLength = "(length ";
  const std::size_t limit_at = body.find(kLimit);
  if (limit_at == std::string_view::npos) {
    return std::nullopt;
  }
  const auto limit = number_at(body, limit_at + kLimit.size());
  const std::size_t length_at = body.rfind(kLength, limit_at);
  if (!limit || length_at == std::string_view::npos) {
    return std::nullopt;
  }
  const auto length = number_at(body, length_at + kLength.size());
  if (!length) {
    return std::nullopt;
  }
  return ContextOverflow{*limit, *length};
}

}  // namespace

std::optional<std::int64_t> max_model_len_from_models(std::string_view body,
                                                      std::string_view served_model_name) {
  boost::system::error_code ec;
  const boost::json::value jv = boost::json::parse(boost::json::string_view(body.data(), body.size()), ec);
  if (ec || !jv.is_object()) {
    return std::nullopt;
  }
  const boost::json::value* data = jv.as_object().if_contains("data");
  if (data == nullptr || !data->is_array()) {
    return std::nullopt;
  }
  const boost::json::array& models = data->as_array();
  const boost::json::object* match = nullptr;
  for (const boost::json::value& m : models) {
    const boost::json::value* id = m.is_object() ? m.as_object().if_contains("id") : nullptr;
    if (id != nullptr && id->is_string() && std::string_view(id->as_string()) == served_model_name) {
      match = &m.as_object();
      break;
    }
  }
  if (match == nullptr && models.size() == 1 && models[0].is_object()) {
    match = &models[0].as_object();
  }
  const boost::json::value* len = match != nullptr ? match->if_contains("max_model_len") : nullptr;
  if (len == nullptr || !len->is_int64() || len->as_int64() <= 0) {
    return std::nullopt;
  }
  return len->as_int64();
}

std::optional<ContextOverflow> parse_context_overflow(std::string_view body) {
  if (auto r = over_long_request(body)) {
    return r;
  }
  return over_long_prompt(body);
}

std::int64_t fitting_max_tokens(std::int64_t max_model_len, std::int64_t prompt_tokens) noexcept {
  return std::max<std::int64_t>(1, max_model_len - prompt_tokens);
}

std::string prompt_too_long_message(ApiKind api, std::int64_t prompt_tokens, std::int64_t max_model_len) {
  if (is_anthropic(api)) {
    return "prompt is too long: " + std::to_string(prompt_tokens) + " tokens > " +
           std::to_string(max_model_len) + " maximum";
  }
  return "This model's maximum context length is " + std::to_string(max_model_len) +
         " tokens. However, your request has " + std::to_string(prompt_tokens) +
         " input tokens. Please reduce the length of the input.";
}

}  // namespace warden::protocol
