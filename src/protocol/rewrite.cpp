#include "protocol/rewrite.hpp"

#include "protocol/error_body.hpp"

#include <algorithm>

namespace warden::protocol {

namespace {

struct Edit {
  ByteSpan span;  // replaced bytes of the input (empty: an insertion at span.begin)
  std::string_view text;
};

// A JSON integer literal's value, or nullopt (a fraction, an exponent, a non-number, or beyond 18 digits).
std::optional<std::int64_t> integer_value(std::string_view text) {
  const bool negative = text.starts_with('-');
  const std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty() || digits.size() > 18) {
    return std::nullopt;
  }
  std::int64_t v = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    v = v * 10 + (c - '0');
  }
  return negative ? -v : v;
}

}  // namespace

std::string RewriteResult::joined(std::string_view input) const {
  if (!changed) {
    return std::string(input);
  }
  std::string out;
  out.reserve(size);
  for (const Piece& p : pieces) {
    out.append(bytes(p, input));
  }
  return out;
}

RewriteResult rewrite_request(ApiKind api, std::string_view body, const BodyLayout& layout,
                              const RewriteOptions& options) {
  auto slice = [body](ByteSpan s) { return body.substr(s.begin, s.end - s.begin); };
  RewriteResult out;
  std::string quoted_model;
  if (options.model) {
    quoted_model = json_quote(*options.model);
  }
  constexpr std::string_view kObject = R"({"include_usage":true})";
  constexpr std::string_view kMember = R"(,"stream_options":{"include_usage":true})";
  constexpr std::string_view kInner = R"("include_usage":true)";
  constexpr std::string_view kInnerNext = R"(,"include_usage":true)";

  std::vector<Edit> edits;
  std::string cap_text;
  if (options.max_tokens_cap) {
    cap_text = std::to_string(*options.max_tokens_cap);
    for (const ByteSpan& m : layout.max_tokens) {
      const auto asked = integer_value(slice(m));
      if (asked && *asked > *options.max_tokens_cap) {
        edits.push_back({m, cap_text});
        out.capped = true;
      }
    }
  }
  if (options.drop_billing && layout.billing_block) {
    edits.push_back({*layout.billing_block, {}});
  }
  if (options.model) {
    for (const ByteSpan& m : layout.model) {
      edits.push_back({m, quoted_model});
    }
  }
  const bool openai = api == ApiKind::openai_chat || api == ApiKind::openai_completions;
  if (options.force_include_usage && openai && layout.stream && lax_true(slice(*layout.stream))) {
    if (!layout.stream_options) {
      edits.push_back({{layout.last_member_end, layout.last_member_end}, kMember});
    } else if (body[layout.stream_options->begin] != '{') {
      edits.push_back({*layout.stream_options, kObject});
    } else if (layout.include_usage) {
      edits.push_back({*layout.include_usage, "true"});
    } else if (layout.stream_options_members == 0) {
      const std::size_t at = layout.stream_options->begin + 1;
      edits.push_back({{at, at}, kInner});
    } else {
      const std::size_t at = layout.stream_options_last_end;
      edits.push_back({{at, at}, kInnerNext});
    }
  }

  for (const Edit& e : edits) {
    out.changed = out.changed || slice(e.span) != e.text;
  }
  if (!out.changed) {
    return out;  // the input is the answer
  }
  std::sort(edits.begin(), edits.end(),
            [](const Edit& a, const Edit& b) { return a.span.begin < b.span.begin; });
  std::size_t pos = 0;
  auto keep = [&](std::size_t end) {
    if (end > pos) {
      out.pieces.push_back({pos, end - pos, false});
    }
  };
  for (const Edit& e : edits) {
    keep(e.span.begin);
    out.pieces.push_back({out.inserted.size(), e.text.size(), true});
    out.inserted.append(e.text);
    pos = e.span.end;
  }
  keep(body.size());
  for (const RewriteResult::Piece& p : out.pieces) {
    out.size += p.size;
  }
  return out;
}

Result<RewriteResult> rewrite_request(ApiKind api, std::string_view body, const RewriteOptions& options) {
  auto layout = scan_layout(body);
  if (!layout) {
    return layout.error();
  }
  return rewrite_request(api, body, *layout, options);
}

}  // namespace warden::protocol
