#include "protocol/errors.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

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

// JSON string literal (with quotes) for arbitrary bytes; invalid UTF-8 is escaped by serialize().
std::string quoted(std::string_view s) {
  return boost::json::serialize(boost::json::string(s));
}

}  // namespace

std::string format_error(ErrorFormat format, int status, std::string_view message, std::string_view code) {
  std::string out;
  if (format == ErrorFormat::anthropic) {
    out += R"({"type":"error","error":{"type":")";
    out += anthropic_error_type(status);
    out += R"(","message":)";
    out += quoted(message);
    out += "}}";
    return out;
  }
  out += R"({"error":{"message":)";
  out += quoted(message);
  out += R"(,"type":")";
  out += openai_error_type(status);
  out += R"(","param":null,"code":)";
  out += code.empty() ? std::string("null") : quoted(code);
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
