// What a request says of its client: Claude Code's billing block read, its API key found.
#include "protocol/client_id.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace warden::protocol {
namespace {

std::optional<ClaudeCodeEntry> entry_of(const std::string& body) {
  const auto info = inspect_request(ApiKind::anthropic_messages, HeaderLookup{}, body);
  EXPECT_TRUE(info.has_value());
  return claude_code_entry(body, info->layout);
}

TEST(ClientId, ReadsClaudeCodesEntrypointFromItsBillingBlock) {
  const auto interactive = entry_of(
      R"({"model":"m","system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.332.0b8; )"
      R"(cc_entrypoint=cli;"},{"type":"text","text":"x"}],"messages":[]})");
  ASSERT_TRUE(interactive);
  EXPECT_EQ(interactive->entrypoint, "cli");
  EXPECT_FALSE(interactive->subagent);
  const auto sub =
      entry_of(R"({"model":"m","system":[{"text":"x-anthropic-billing-header: cc_version=2.1.332.0ce; )"
               R"(cc_entrypoint=sdk-cli; cc_is_subagent=true;","type":"text"}],"messages":[]})");
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->entrypoint, "sdk-cli");
  EXPECT_TRUE(sub->subagent);
  EXPECT_FALSE(entry_of(R"({"model":"m","system":"cc_entrypoint=cli;","messages":[]})"))
      << "only the billing block counts";
  EXPECT_FALSE(entry_of(R"({"model":"m","system":[{"type":"text","text":"x"},)"
                        R"({"type":"text","text":"x-anthropic-billing-header: cc_entrypoint=cli;"}]})"))
      << "only as the first block";
}

TEST(ClientId, TheAPIKeyIsXApiKeyElseABearerToken) {
  const std::vector<HeaderField> anthropic = {{"X-Api-Key", " sk-1 "}, {"Authorization", "Bearer sk-2"}};
  EXPECT_EQ(api_key(HeaderLookup(anthropic)), "sk-1");
  const std::vector<HeaderField> openai = {{"authorization", "bearer  sk-2"}};
  EXPECT_EQ(api_key(HeaderLookup(openai)), "sk-2");
  const std::vector<HeaderField> basic = {{"Authorization", "Basic dXNlcg=="}};
  EXPECT_EQ(api_key(HeaderLookup(basic)), std::nullopt);
  const std::vector<HeaderField> empty = {{"x-api-key", ""}, {"authorization", "Bearer "}};
  EXPECT_EQ(api_key(HeaderLookup(empty)), std::nullopt);
}

TEST(ClientId, AKeyIsShownByADigestAndATenantIdIsNeverZero) {
  EXPECT_EQ(key_name("sk-secret").size(), 12U);
  EXPECT_EQ(key_name("sk-secret").rfind("key:", 0), 0U);
  EXPECT_NE(key_name("sk-secret"), key_name("sk-other"));
  EXPECT_NE(tenant_id(""), 0U);
  EXPECT_NE(tenant_id("a"), tenant_id("b"));
}

}  // namespace
}  // namespace warden::protocol
