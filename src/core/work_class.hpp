#pragma once
// A request's class of work and its tenant (RequestFacts::work_class, tenant, tenant_weight), from its
// headers and body by the operator's rules (the config file's `clients:`; docs/config.md). Pure.
//
// Class, first match wins: the operator's rules in order (a header with a value, or an API key); Claude
// Code's own word (its billing block: `cc_entrypoint=cli` interactive, any other entrypoint, `sdk-cli` for
// `claude -p`, headless; a subagent says its parent's entrypoint, so it is in its parent's class); the
// default class (headless: a fleet unless a rule says a person waits).
//
// Tenant: the value of the configured tenant header, else the API key: the name of the configured tenant
// that lists it, else, when the warden checks keys (`api_keys`), "key:<8 hex>" of a digest of it (a key
// nobody checks is whatever the client says: a new one per request would put it first in every turn);
// else none (0, every such request one tenant). Its weight is the configured tenant's, else the default.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.hpp"
#include "protocol/request.hpp"

namespace warden::core {

/// Requests a class rule names: those with `header` (a lower-case name) equal to `value` (any value when
/// empty), or when `header` is empty those sent with the API key `value`.
struct ClientMatch {
  std::string header;
  std::string value;

  friend bool operator==(const ClientMatch&, const ClientMatch&) = default;
};

struct ClassRule {
  ClientMatch match;
  WorkClass work_class = WorkClass::interactive;

  friend bool operator==(const ClassRule&, const ClassRule&) = default;
};

/// A tenant the operator names: its weight, and the API keys that are its own.
struct TenantRule {
  std::string name;
  double weight = 1;
  std::vector<std::string> api_keys;

  friend bool operator==(const TenantRule&, const TenantRule&) = default;
};

struct ClientRules {
  std::vector<ClassRule> classes;  ///< first match wins, before Claude Code's own entrypoint
  WorkClass default_class = WorkClass::headless;
  std::string tenant_header;  ///< lower-case; empty: tenants by API key
  std::vector<TenantRule> tenants;
  double default_weight = 1;
  bool keys_checked = false;  ///< the warden answers 401 to keys it does not know (config `api_keys`)

  friend bool operator==(const ClientRules&, const ClientRules&) = default;
};

/// What the rules say of one request.
struct ClientFacts {
  WorkClass work_class = WorkClass::headless;
  std::string tenant_name;  ///< empty: none named
  std::uint64_t tenant = 0;
  double tenant_weight = 1;
};

[[nodiscard]] ClientFacts client_facts(const ClientRules& rules, const protocol::HeaderLookup& headers,
                                       std::string_view body, const protocol::BodyLayout& layout);

/// `facts` with the class, tenant and weight of `client`.
void apply_client(const ClientFacts& client, RequestFacts& facts);

}  // namespace warden::core
