#pragma once
// Rewrites a request body for the upstream engine by splicing bytes, without reparsing into a DOM:
// every byte outside the edited values (unknown fields, cache_control markers, member order, whitespace)
// is kept exactly. The result is a list of pieces (slices of the input and the few inserted texts), so a
// 200 KB prompt is sent as it is, never copied. The edits come from the BodyLayout that inspect_request()
// found in its validating pass; the overload without a layout scans (and validates) the body itself.

#include "protocol/api.hpp"
#include "protocol/error.hpp"
#include "protocol/request.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warden::protocol {

struct RewriteOptions {
  /// New value for every top-level "model" member (e.g. the served_model_name), nullopt = keep.
  std::optional<std::string_view> model;
  /// For openai_chat / openai_completions bodies with "stream": true, make sure
  /// stream_options.include_usage is true: add "stream_options" if absent (after the last member),
  /// replace it if null or not an object, add or overwrite "include_usage" inside it otherwise.
  /// Ignored for the other APIs and non-streaming requests.
  bool force_include_usage = false;
  /// Lower every top-level "max_tokens" / "max_completion_tokens" / "max_output_tokens" whose value is an
  /// integer above this to this (so prompt + output fits the context). An absent member stays absent;
  /// a value that is not an integer is left for the engine to refuse. nullopt = keep.
  std::optional<std::int64_t> max_tokens_cap;
  /// Drop Claude Code's billing block (BodyLayout::billing_block) if the body has one.
  bool drop_billing = false;
};

struct RewriteResult {
  struct Piece {
    std::size_t offset = 0;  // into the input body, or into `inserted`
    std::size_t size = 0;
    bool inserted = false;
  };
  bool changed = false;       // false: send the input as it is
  bool capped = false;        // a max_tokens value was lowered to RewriteOptions::max_tokens_cap
  std::vector<Piece> pieces;  // the new body in order; empty when nothing changed
  std::string inserted;       // the new texts, back to back
  std::size_t size = 0;       // length of the new body (0 when nothing changed)

  /// One piece's bytes; `input` is the body that was rewritten.
  std::string_view bytes(const Piece& p, std::string_view input) const noexcept {
    return p.inserted ? std::string_view(inserted).substr(p.offset, p.size) : input.substr(p.offset, p.size);
  }
  /// The new body as one string (a copy of the input when nothing changed).
  std::string joined(std::string_view input) const;
};

/// Rewrites `body`, whose layout inspect_request() reported (RequestInfo::layout). Cannot fail.
RewriteResult rewrite_request(ApiKind api, std::string_view body, const BodyLayout& layout,
                              const RewriteOptions& options);

/// The same for a body not inspected before: validates it first (Errc as inspect_request()).
Result<RewriteResult> rewrite_request(ApiKind api, std::string_view body, const RewriteOptions& options);

}  // namespace warden::protocol
