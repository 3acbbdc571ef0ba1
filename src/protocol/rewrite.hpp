#pragma once
// Rewrites a request body for the upstream engine by splicing bytes, without reparsing into a DOM:
// every byte outside the edited values (unknown fields, cache_control markers, member order, whitespace)
// is kept exactly. Run inspect_request() first: rewrite assumes valid JSON but still fails cleanly
// (Errc::not_json_object / malformed_json) instead of producing garbage.

#include "protocol/api.hpp"
#include "protocol/error.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace warden::protocol {

struct RewriteOptions {
  /// New value for every top-level "model" member (e.g. the served_model_name), nullopt = keep.
  std::optional<std::string_view> model;
  /// For openai_chat / openai_completions bodies with "stream": true, make sure
  /// stream_options.include_usage is true: add "stream_options" if absent (before the closing brace),
  /// replace it if null or not an object, add or overwrite "include_usage" inside it otherwise.
  /// Ignored for the other APIs and non-streaming requests.
  bool force_include_usage = false;
};

struct RewriteResult {
  std::string body;      // the rewritten body; empty when nothing changed
  bool changed = false;  // false: send the input as it is
};

Result<RewriteResult> rewrite_request(ApiKind api, std::string_view body, const RewriteOptions& options);

}  // namespace warden::protocol
