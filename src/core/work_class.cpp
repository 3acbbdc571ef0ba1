#include "core/work_class.hpp"

#include <algorithm>

#include "base/trim.hpp"
#include "protocol/client_id.hpp"

namespace warden::core {

namespace {

bool matches(const ClientMatch& m, const protocol::HeaderLookup& headers,
             std::optional<std::string_view> key) {
  if (m.header.empty()) {
    return key && *key == m.value;
  }
  const auto v = headers.find(m.header);
  return v && (m.value.empty() || base::trim(*v) == m.value);
}

WorkClass work_class_of(const ClientRules& rules, const protocol::HeaderLookup& headers,
                        std::optional<std::string_view> key, std::string_view body,
                        const protocol::BodyLayout& layout) {
  for (const ClassRule& rule : rules.classes) {
    if (matches(rule.match, headers, key)) {
      return rule.work_class;
    }
  }
  if (const auto entry = protocol::claude_code_entry(body, layout); entry && !entry->entrypoint.empty()) {
    return entry->entrypoint == "cli" ? WorkClass::interactive : WorkClass::headless;
  }
  return rules.default_class;
}

}  // namespace

ClientFacts client_facts(const ClientRules& rules, const protocol::HeaderLookup& headers,
                         std::string_view body, const protocol::BodyLayout& layout) {
  const std::optional<std::string_view> key = protocol::api_key(headers);
  ClientFacts out;
  out.work_class = work_class_of(rules, headers, key, body, layout);
  out.tenant_weight = rules.default_weight;
  if (!rules.tenant_header.empty()) {
    if (const auto v = headers.find(rules.tenant_header); v && !base::trim(*v).empty()) {
      out.tenant_name = std::string(base::trim(*v).substr(0, 64));
    }
  } else if (key) {
    const auto owner = std::find_if(rules.tenants.begin(), rules.tenants.end(), [&](const TenantRule& t) {
      return std::find(t.api_keys.begin(), t.api_keys.end(), *key) != t.api_keys.end();
    });
    if (owner != rules.tenants.end()) {
      out.tenant_name = owner->name;
    } else if (rules.keys_checked) {
      out.tenant_name = protocol::key_name(*key);
    }
  }
  if (out.tenant_name.empty()) {
    return out;
  }
  out.tenant = protocol::tenant_id(out.tenant_name);
  const auto named = std::find_if(rules.tenants.begin(), rules.tenants.end(),
                                  [&](const TenantRule& t) { return t.name == out.tenant_name; });
  if (named != rules.tenants.end()) {
    out.tenant_weight = named->weight;
  }
  return out;
}

void apply_client(const ClientFacts& client, RequestFacts& facts) {
  facts.work_class = client.work_class;
  facts.tenant = client.tenant;
  facts.tenant_weight = client.tenant_weight;
}

}  // namespace warden::core
