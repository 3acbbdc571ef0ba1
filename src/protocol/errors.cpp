#include "protocol/errors.hpp"

#include <cstdint>

namespace warden::protocol {

std::string_view openai_error_type(int status) noexcept {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 429:
      return "rate_limit_error";
    case 503:
      return "service_unavailable";
    default:
      return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string_view anthropic_error_type(int status) noexcept {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    case 504:
      return "timeout_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not one (overlongs, surrogates and
// code points above U+10FFFF are invalid too).
std::size_t utf8_length(std::string_view s, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(s[k]); };
  const std::uint8_t c = byte(i);
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) {
    return 0;
  }
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
      (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
    return 0;
  }
  return n;
}

}  // namespace

std::string json_quote(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<std::uint8_t>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_length(s, i);
      if (n == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 0xF];
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
  return out;
}

std::string format_error(ErrorFormat format, int status, std::string_view message, std::string_view code) {
  std::string out;
  if (format == ErrorFormat::anthropic) {
    out += R"({"type":"error","error":{"type":")";
    out += anthropic_error_type(status);
    out += R"(","message":)";
    out += json_quote(message);
    out += "}}";
    return out;
  }
  out += R"({"error":{"message":)";
  out += json_quote(message);
  out += R"(,"type":")";
  out += openai_error_type(status);
  out += R"(","param":null,"code":)";
  out += code.empty() ? std::string("null") : json_quote(code);
  out += "}}";
  return out;
}

std::string_view describe(Errc e) noexcept {
  switch (e) {
    case Errc::malformed_json:
      return "request body is not valid JSON";
    case Errc::body_not_object:
      return "request body must be a JSON object";
    case Errc::missing_model:
      return "request body has no \"model\"";
    case Errc::model_not_string:
      return "\"model\" must be a string";
    case Errc::too_deep:
      return "request body is nested too deeply";
    case Errc::not_json_object:
      return "body is not a JSON object";
    case Errc::no_usage:
      return "response has no usage";
    case Errc::sse_event_too_large:
      return "event stream event too large";
    case Errc::prom_too_many_series:
      return "metrics scrape has too many series";
    case Errc::ok:
      return "ok";
  }
  return "error";
}

}  // namespace warden::protocol
