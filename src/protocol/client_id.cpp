#include "protocol/client_id.hpp"

#include <xxhash.h>

#include "base/trim.hpp"

namespace warden::protocol {

namespace {

// The value of `name=` in a billing block's text ("...; cc_entrypoint=cli; ..."), up to its `;`.
std::optional<std::string_view> field(std::string_view text, std::string_view name) {
  std::size_t at = 0;
  while ((at = text.find(name, at)) != std::string_view::npos) {
    const bool starts = at == 0 || text[at - 1] == ' ' || text[at - 1] == ';' || text[at - 1] == ':';
    if (starts && at + name.size() < text.size() && text[at + name.size()] == '=') {
      const std::size_t from = at + name.size() + 1;
      const std::size_t to = text.find_first_of(";\"", from);
      return text.substr(from, (to == std::string_view::npos ? text.size() : to) - from);
    }
    at += name.size();
  }
  return std::nullopt;
}

}  // namespace

std::optional<ClaudeCodeEntry> claude_code_entry(std::string_view body, const BodyLayout& layout) {
  if (!layout.billing_block || layout.billing_block->end > body.size()) {
    return std::nullopt;
  }
  const std::string_view block =
      body.substr(layout.billing_block->begin, layout.billing_block->end - layout.billing_block->begin);
  const std::size_t prefix = block.find(kBillingPrefix);
  if (prefix == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view text = block.substr(prefix + kBillingPrefix.size());
  ClaudeCodeEntry entry;
  entry.entrypoint = std::string(base::trim(field(text, "cc_entrypoint").value_or("")));
  entry.subagent = field(text, "cc_is_subagent").value_or("") == "true";
  return entry;
}

std::optional<std::string_view> api_key(const HeaderLookup& headers) {
  if (const auto key = headers.find("x-api-key")) {
    if (const std::string_view k = base::trim(*key); !k.empty()) {
      return k;
    }
  }
  const auto auth = headers.find("authorization");
  if (!auth) {
    return std::nullopt;
  }
  const std::string_view a = base::trim(*auth);
  constexpr std::string_view bearer = "bearer ";
  if (a.size() <= bearer.size()) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < bearer.size(); ++i) {
    if ((a[i] | 0x20) != bearer[i]) {
      return std::nullopt;
    }
  }
  const std::string_view token = base::trim(a.substr(bearer.size()));
  return token.empty() ? std::nullopt : std::optional<std::string_view>(token);
}

std::string key_name(std::string_view key) {
  static constexpr std::string_view digits = "0123456789abcdef";
  std::uint64_t h = XXH3_64bits(key.data(), key.size()) >> 32;
  std::string out = "key:00000000";
  for (std::size_t i = out.size(); i > 4; --i, h >>= 4) {
    out[i - 1] = digits[h & 0xf];
  }
  return out;
}

std::uint64_t tenant_id(std::string_view name) {
  const std::uint64_t h = XXH3_64bits(name.data(), name.size());
  return h == 0 ? 1 : h;
}

}  // namespace warden::protocol
