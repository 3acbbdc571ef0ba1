// A request's class of work and tenant from its headers and body, by the operator's rules
// (core/work_class.hpp), over bodies as Claude Code sends them.
#include "core/work_class.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/client_id.hpp"

namespace warden::core {
namespace {

using protocol::HeaderField;

// A Claude Code body whose billing block names `entry` (nothing when empty).
std::string claude_body(const std::string& entry) {
  const std::string billing =
      entry.empty() ? ""
                    : R"({"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.332.0b8; )" +
                          entry + R"("},)";
  return R"({"model":"m","system":[)" + billing + R"({"type":"text","text":"You are Claude Code."}],)" +
         R"("messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Read"}]})";
}

ClientFacts facts_of(const ClientRules& rules, const std::vector<HeaderField>& headers,
                     const std::string& body) {
  const auto info =
      protocol::inspect_request(protocol::ApiKind::anthropic_messages, protocol::HeaderLookup(headers), body);
  EXPECT_TRUE(info.has_value());
  return client_facts(rules, protocol::HeaderLookup(headers), body, info->layout);
}

TEST(WorkClass, ClaudeCodeSaysWhetherAPersonOrAFleetWaits) {
  const ClientRules rules;
  EXPECT_EQ(facts_of(rules, {}, claude_body("cc_entrypoint=cli;")).work_class, WorkClass::interactive);
  EXPECT_EQ(facts_of(rules, {}, claude_body("cc_entrypoint=sdk-cli;")).work_class, WorkClass::headless);
  EXPECT_EQ(facts_of(rules, {}, claude_body("cc_entrypoint=cli; cc_is_subagent=true;")).work_class,
            WorkClass::interactive)
      << "a subagent is in its parent's class";
  EXPECT_EQ(facts_of(rules, {}, claude_body("")).work_class, WorkClass::headless) << "the default class";
}

TEST(WorkClass, TheOperatorsRulesComeFirstByHeaderOrKey) {
  ClientRules rules;
  rules.classes = {{.match = {.header = "originator", .value = "codex_cli_rs"}},
                   {.match = {.header = "", .value = "sk-fleet"}, .work_class = WorkClass::headless}};
  const std::vector<HeaderField> codex = {{"Originator", "codex_cli_rs"}};
  EXPECT_EQ(facts_of(rules, codex, claude_body("")).work_class, WorkClass::interactive);
  const std::vector<HeaderField> exec = {{"originator", "codex_exec"}};
  EXPECT_EQ(facts_of(rules, exec, claude_body("")).work_class, WorkClass::headless);
  const std::vector<HeaderField> fleet = {{"x-api-key", "sk-fleet"}};
  EXPECT_EQ(facts_of(rules, fleet, claude_body("cc_entrypoint=cli;")).work_class, WorkClass::headless)
      << "a rule overrides the client's own word";
  rules.default_class = WorkClass::interactive;
  EXPECT_EQ(facts_of(rules, {}, claude_body("")).work_class, WorkClass::interactive);
}

TEST(Tenant, ByAPIKeyNamedAndWeighedByTheRules) {
  ClientRules rules;
  rules.tenants = {{.name = "team-a", .weight = 3, .api_keys = {"sk-a1", "sk-a2"}}};
  const ClientFacts a1 = facts_of(rules, {{"x-api-key", "sk-a1"}}, claude_body(""));
  const ClientFacts a2 = facts_of(rules, {{"Authorization", "Bearer sk-a2"}}, claude_body(""));
  EXPECT_EQ(a1.tenant_name, "team-a");
  EXPECT_EQ(a1.tenant, a2.tenant) << "two keys of one tenant";
  EXPECT_EQ(a1.tenant_weight, 3);
  EXPECT_EQ(facts_of(rules, {{"x-api-key", "sk-other"}}, claude_body("")).tenant, 0U)
      << "a key nobody checks names no tenant (a client could send a new one each time)";
  rules.keys_checked = true;
  const ClientFacts other = facts_of(rules, {{"x-api-key", "sk-other"}}, claude_body(""));
  EXPECT_EQ(other.tenant_name, protocol::key_name("sk-other"));
  EXPECT_EQ(other.tenant_name.find("sk-"), std::string::npos) << "the key is never shown";
  EXPECT_NE(other.tenant, a1.tenant);
  EXPECT_EQ(other.tenant_weight, 1);
  const ClientFacts none = facts_of(rules, {}, claude_body(""));
  EXPECT_EQ(none.tenant, 0U);
  EXPECT_EQ(none.tenant_name, "");
}

TEST(Tenant, ByAConfiguredHeader) {
  ClientRules rules;
  rules.tenant_header = "x-team";
  rules.tenants = {{.name = "blue", .weight = 2}};
  const ClientFacts blue = facts_of(rules, {{"X-Team", " blue "}, {"x-api-key", "k"}}, claude_body(""));
  EXPECT_EQ(blue.tenant_name, "blue");
  EXPECT_EQ(blue.tenant_weight, 2);
  EXPECT_EQ(facts_of(rules, {{"x-api-key", "k"}}, claude_body("")).tenant, 0U)
      << "with a tenant header, a request without it names none";
}

}  // namespace
}  // namespace warden::core
