#include "protocol/error_body.hpp"

#include "protocol/utf8.hpp"

#include <boost/json/parse.hpp>

#include <cstdint>
#include <string>

namespace warden::protocol {

std::string_view openai_error_type(int status) noexcept {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 429:
      return "rate_limit_error";
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

std::string_view vllm_error_type(int status) noexcept {
  if (status == 404) {
    return "NotFoundError";
  }
  if (status == 413) {
    return "RequestEntityTooLarge";
  }
  return status >= 500 ? "InternalServerError" : "BadRequestError";
}

std::string json_quote(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<std::uint8_t>(s[i]);
    if (c >= 0x80) {
      const auto* base = reinterpret_cast<const unsigned char*>(s.data());
      const std::size_t n = detail::utf8_sequence(base + i, base + s.size());
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
  return openai_error_body({.message = message, .type = openai_error_type(status), .code = code});
}

std::string openai_error_body(const OpenAiError& e) {
  std::string out = R"({"error":{"message":)";
  out += json_quote(e.message);
  out += R"(,"type":)";
  out += json_quote(e.type);
  if (e.param_and_code) {
    out += R"(,"param":)";
    out += e.param.empty() ? std::string("null") : json_quote(e.param);
    out += R"(,"code":)";
    if (e.status_code != 0) {
      out += std::to_string(e.status_code);
    } else {
      out += e.code.empty() ? std::string("null") : json_quote(e.code);
    }
  }
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

std::optional<std::string> error_message(std::string_view body) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(body, ec);
  const boost::json::object* o = ec ? nullptr : v.if_object();
  if (!o) {
    return std::nullopt;
  }
  if (const auto* e = o->if_contains("error"); e && e->is_object()) {
    o = &e->get_object();
  }
  const auto* m = o->if_contains("message");
  if (!m || !m->is_string()) {
    return std::nullopt;
  }
  return std::string(m->get_string());
}

}  // namespace warden::protocol
