#pragma once
// What a request says of its client, for its class of work and its tenant (core/work_class.hpp): Claude
// Code's entrypoint, read from the billing block it puts first in `system` (`x-anthropic-billing-header:
// cc_version=...; cc_entrypoint=cli;` for the interactive `claude`, `cc_entrypoint=sdk-cli;` for
// `claude -p`, `cc_is_subagent=true;` added by a subagent of either), and the API key it sends
// (`x-api-key`, or `Authorization: Bearer`), never kept: only a digest of it names a tenant.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/request.hpp"

namespace warden::protocol {

/// Claude Code's billing block, read.
struct ClaudeCodeEntry {
  std::string entrypoint;  ///< "cli", "sdk-cli", ... (as sent; empty when the block names none)
  bool subagent = false;   ///< cc_is_subagent=true
};

/// The billing block of `body` (layout.billing_block), read; nullopt when the body has none.
[[nodiscard]] std::optional<ClaudeCodeEntry> claude_code_entry(std::string_view body,
                                                               const BodyLayout& layout);

/// The API key of the request: `x-api-key`, else the token of `Authorization: Bearer <token>`; trimmed,
/// nullopt when absent or empty.
[[nodiscard]] std::optional<std::string_view> api_key(const HeaderLookup& headers);

/// How a tenant known only by its API key is named where it is shown: "key:" and 8 hex digits of a digest
/// of the key (the key itself is a secret).
[[nodiscard]] std::string key_name(std::string_view key);

/// A tenant's id in the routing core (RequestFacts::tenant): a digest of its name, never 0.
[[nodiscard]] std::uint64_t tenant_id(std::string_view name);

}  // namespace warden::protocol
