#pragma once
// The protocol layer's error codes, carried by its Result (base::Result with an error_code).
//
//   protocol::Result<RequestInfo> r = inspect_request(...);
//   if (!r) { if (r.error() == warden::protocol::Errc::missing_model) ... }

#include <boost/system/error_code.hpp>

#include <type_traits>

#include "base/result.hpp"

namespace warden::protocol {

enum class Errc {
  ok = 0,
  // Request inspection (the gateway answers these with 400 in the client's API format).
  malformed_json,    // not valid JSON (syntax, bad escape, invalid UTF-8, trailing garbage, truncated)
  body_not_object,   // valid JSON but the top level is not an object
  missing_model,     // no top-level "model" member, or an empty string
  model_not_string,  // "model" present but not a string
  too_deep,          // nesting deeper than the configured limit
  // Streaming codecs.
  sse_event_too_large,   // one SSE event (or line) exceeded SseLimits
  prom_too_many_series,  // a Prometheus scrape exceeded PromLimits::max_series
  // Rewriting / usage.
  not_json_object,  // rewrite or usage parse given something that is not a JSON object
  no_usage,         // a response body without a usable "usage" object
};

/// The category behind Errc; name() is "warden.protocol".
const boost::system::error_category& protocol_category() noexcept;

inline boost::system::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), protocol_category()};
}

/// Short stable name of an error, e.g. "malformed_json" (for logs and stats).
const char* to_string(Errc e) noexcept;

// The protocol layer's Result: base::Result with an Errc code (stable names for logs and stats).
template <class T>
using Result = base::Result<T, boost::system::error_code>;

}  // namespace warden::protocol

template <>
struct boost::system::is_error_code_enum<warden::protocol::Errc> : std::true_type {};
