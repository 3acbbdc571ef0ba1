// Output caps that fit the context, the engine's context errors, Claude Code's billing block and the
// prompt-start digest.
#include "protocol/context_limit.hpp"
#include "protocol/rewrite.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace warden::protocol {
namespace {

namespace json = boost::json;

std::string rewritten(ApiKind api, std::string_view body, const RewriteOptions& o) {
  auto r = rewrite_request(api, body, o);
  EXPECT_TRUE(r) << body;
  return r ? r->joined(body) : std::string();
}

RewriteOptions cap(std::int64_t n) {
  RewriteOptions o;
  o.max_tokens_cap = n;
  return o;
}

TEST(FitMaxTokensTest, LowersEachApisField) {
  EXPECT_EQ(rewritten(ApiKind::openai_chat, R"({"model":"m","messages":[],"max_tokens":32000})", cap(4096)),
            R"({"model":"m","messages":[],"max_tokens":4096})");
  EXPECT_EQ(
      rewritten(ApiKind::openai_chat, R"({"model":"m","max_completion_tokens": 9000 ,"x":1})", cap(100)),
      R"({"model":"m","max_completion_tokens": 100 ,"x":1})");
  EXPECT_EQ(rewritten(ApiKind::openai_completions, R"({"model":"m","prompt":"hi","max_tokens":50})", cap(7)),
            R"({"model":"m","prompt":"hi","max_tokens":7})");
  EXPECT_EQ(
      rewritten(ApiKind::openai_responses, R"({"model":"m","input":"hi","max_output_tokens":500})", cap(1)),
      R"({"model":"m","input":"hi","max_output_tokens":1})");
  EXPECT_EQ(rewritten(ApiKind::anthropic_messages,
                      R"({"max_tokens":32000,"model":"m","messages":[{"role":"user","content":"hi"}]})",
                      cap(19944)),
            R"({"max_tokens":19944,"model":"m","messages":[{"role":"user","content":"hi"}]})");
}

TEST(FitMaxTokensTest, BothChatFieldsAndDuplicatesAreCapped) {
  EXPECT_EQ(rewritten(ApiKind::openai_chat, R"({"model":"m","max_tokens":900,"max_completion_tokens":800})",
                      cap(10)),
            R"({"model":"m","max_tokens":10,"max_completion_tokens":10})");
  EXPECT_EQ(rewritten(ApiKind::openai_chat, R"({"model":"m","max_tokens":900,"max_tokens":5})", cap(10)),
            R"({"model":"m","max_tokens":10,"max_tokens":5})");
}

TEST(FitMaxTokensTest, FittingOrAbsentOrOddValuesStayAsTheyAre) {
  const std::string fits = R"({"model":"m","max_tokens":4096})";
  auto r = rewrite_request(ApiKind::anthropic_messages, fits, cap(4096));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->changed);
  EXPECT_FALSE(r->capped);
  const std::string absent = R"({"model":"m","messages":[{"role":"user","content":"max_tokens"}]})";
  r = rewrite_request(ApiKind::openai_chat, absent, cap(1));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->changed);  // no member is added
  for (const char* odd : {R"({"model":"m","max_tokens":1e9})", R"({"model":"m","max_tokens":null})",
                          R"({"model":"m","max_tokens":"9000"})", R"({"model":"m","max_tokens":9000.5})",
                          R"({"model":"m","metadata":{"max_tokens":9000}})"}) {
    r = rewrite_request(ApiKind::openai_chat, odd, cap(10));
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->changed) << odd;
  }
}

TEST(FitMaxTokensTest, WithTheOtherEditsOfOneRewrite) {
  RewriteOptions o = cap(100);
  o.model = "Qwen/Qwen3-4B";
  o.force_include_usage = true;
  const std::string body = R"({"model":"q","stream":true,"max_tokens":5000})";
  auto r = rewrite_request(ApiKind::openai_chat, body, o);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->capped);
  EXPECT_EQ(
      r->joined(body),
      R"({"model":"Qwen/Qwen3-4B","stream":true,"max_tokens":100,"stream_options":{"include_usage":true}})");
  // The input is borrowed, not copied: only the edits are in `inserted`.
  EXPECT_LT(r->inserted.size(), 80u);
}

TEST(FitMaxTokensTest, FittingCapIsAtLeastOne) {
  EXPECT_EQ(fitting_max_tokens(32768, 12824), 19944);
  EXPECT_EQ(fitting_max_tokens(32768, 32768), 1);
  EXPECT_EQ(fitting_max_tokens(32768, 90000), 1);
}

TEST(ContextOverflowTest, VllmsMaxTokensError) {
  const std::string body = json::serialize(json::object{
      {"error",
       {{"message",
         "'max_tokens' is too large: 32000. This model's maximum context length is 32768 tokens and your "
         "request has 12824 input tokens (32000 > 32768 - 12824)."},
        {"type", "BadRequestError"},
        {"param", "max_tokens"},
        {"code", 400}}}});
  const auto o = parse_context_overflow(body);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->max_model_len, 32768);
  EXPECT_EQ(o->input_tokens, 12824);
  EXPECT_FALSE(o->prompt_too_long());
  EXPECT_EQ(fitting_max_tokens(o->max_model_len, o->input_tokens), 32768 - 12824);
}

TEST(ContextOverflowTest, VllmsOverLongPromptErrors) {
  auto o = parse_context_overflow(
      R"({"error":{"message":"This model's maximum context length is 32768 tokens. However, your request has )"
      R"(40000 input tokens. Please reduce the length of the input messages.","code":400}})");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->max_model_len, 32768);
  EXPECT_EQ(o->input_tokens, 40000);
  EXPECT_TRUE(o->prompt_too_long());
  o = parse_context_overflow(
      "This model's maximum context length is 4096 tokens. However, you requested 4000 output tokens and "
      "your "
      "prompt contains at least 101 input tokens, for a total of at least 4101 tokens.");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->input_tokens, 101);
  EXPECT_FALSE(o->prompt_too_long());
  o = parse_context_overflow(
      R"({"message":"The decoder prompt (length 50000) is longer than the maximum model length of 32768."})");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->max_model_len, 32768);
  EXPECT_EQ(o->input_tokens, 50000);
  EXPECT_TRUE(o->prompt_too_long());
}

TEST(ContextOverflowTest, OtherErrorsAreNotContextErrors) {
  EXPECT_FALSE(parse_context_overflow(R"({"error":{"message":"The model `x` does not exist."}})"));
  EXPECT_FALSE(parse_context_overflow("maximum context length is many tokens"));
  EXPECT_FALSE(parse_context_overflow("This model's maximum context length is 4096 tokens."));
  EXPECT_FALSE(parse_context_overflow(""));
}

TEST(ContextOverflowTest, PromptTooLongInTheClientsWording) {
  const std::string a = prompt_too_long_message(ApiKind::anthropic_messages, 40000, 32768);
  EXPECT_EQ(a, "prompt is too long: 40000 tokens > 32768 maximum");
  const std::string o = prompt_too_long_message(ApiKind::openai_chat, 40000, 32768);
  EXPECT_NE(o.find("maximum context length is 32768 tokens"), std::string::npos);
  EXPECT_NE(o.find("40000 input tokens"), std::string::npos);
}

TEST(ModelsTest, MaxModelLenOfTheServedModel) {
  const std::string body = R"({"object":"list","data":[{"id":"other","max_model_len":8192},)"
                           R"({"id":"Qwen/Qwen3-4B","object":"model","max_model_len":32768}]})";
  EXPECT_EQ(max_model_len_from_models(body, "Qwen/Qwen3-4B"), 32768);
  EXPECT_EQ(max_model_len_from_models(body, "other"), 8192);
  EXPECT_EQ(max_model_len_from_models(body, "missing"), std::nullopt);  // two entries, none this one
  EXPECT_EQ(max_model_len_from_models(R"({"data":[{"id":"x","max_model_len":4096}]})", "y"), 4096);
  EXPECT_EQ(max_model_len_from_models(R"({"data":[{"id":"x"}]})", "x"), std::nullopt);
  EXPECT_EQ(max_model_len_from_models(R"({"data":[{"id":"x","max_model_len":0}]})", "x"), std::nullopt);
  EXPECT_EQ(max_model_len_from_models("not json", "x"), std::nullopt);
  EXPECT_EQ(max_model_len_from_models("", "x"), std::nullopt);
}

constexpr std::string_view kBilling =
    R"({"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.332.0b8; cc_entrypoint=sdk-cli;"})";

std::string claude_body(std::string_view first_block, std::string_view rest = "") {
  return std::string(
             R"({"model":"m","max_tokens":32000,"messages":[{"role":"user","content":"hi"}],"system":[)") +
         std::string(first_block) + std::string(rest) + "]}";
}

RewriteOptions drop() {
  RewriteOptions o;
  o.drop_billing = true;
  return o;
}

TEST(BillingBlockTest, DropsOnlyTheFirstBlockAndItsComma) {
  const std::string rest =
      R"(, {"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}},)"
      R"({"type":"text","text":"x-anthropic-billing-header: not first"}])";
  const std::string body = claude_body(kBilling, rest.substr(0, rest.size() - 1));
  EXPECT_EQ(
      rewritten(ApiKind::anthropic_messages, body, drop()),
      claude_body(R"({"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}},)"
                  R"({"type":"text","text":"x-anthropic-billing-header: not first"})"));
  // The same in any member order, and with spaces.
  const std::string spaced =
      claude_body(R"( { "text" : "x-anthropic-billing-header: cc_version=1;" , "type" : "text" } ,  )",
                  R"({"type":"text","text":"a"})");
  EXPECT_EQ(rewritten(ApiKind::anthropic_messages, spaced, drop()),
            claude_body(" ", R"({"type":"text","text":"a"})"));
  // The only block: the array is left empty.
  EXPECT_EQ(rewritten(ApiKind::anthropic_messages, claude_body(kBilling), drop()), claude_body(""));
}

TEST(BillingBlockTest, AnythingElseIsUntouched) {
  const std::string second = R"({"type":"text","text":"a"})";
  for (
      const std::string& body : {
          claude_body(second, std::string(",") + std::string(kBilling)),  // not first
          claude_body(
              R"({"type":"text","text":"x-anthropic-billing-header: x","cache_control":{"type":"ephemeral"}})"),
          claude_body(R"({"type":"image","text":"x-anthropic-billing-header: x"})"),
          claude_body(R"({"type":"text","text":"X-anthropic-billing-header: x"})"),
          claude_body(R"({"type":"text","text":" x-anthropic-billing-header: x"})"),
          claude_body(R"("x-anthropic-billing-header: x")"),
          std::string(R"({"model":"m","system":"x-anthropic-billing-header: x","messages":[]})"),
          std::string(R"({"model":"m","messages":[{"type":"text","text":"x-anthropic-billing-header: x"}]})"),
      }) {
    auto r = rewrite_request(ApiKind::anthropic_messages, body, drop());
    ASSERT_TRUE(r) << body;
    EXPECT_FALSE(r->changed) << body;
  }
  // A later "system" replaces the earlier one (the last member wins), and so does its billing block.
  const std::string twice = R"({"model":"m","system":[)" + std::string(kBilling) + R"(],"system":"plain"})";
  auto layout = scan_layout(twice);
  ASSERT_TRUE(layout);
  EXPECT_FALSE(layout->billing_block);
  // Off: kept.
  auto r = rewrite_request(ApiKind::anthropic_messages, claude_body(kBilling), RewriteOptions{});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->changed);
}

TEST(PromptStartTest, TheBillingBlockIsNotPartOfTheStartWhenDropped) {
  const std::string rest = R"(,{"type":"text","text":"You are Claude Code."})";
  const std::string a = claude_body(kBilling, rest);
  std::string other(kBilling);
  other.replace(other.find("0b8"), 3, "0ce");
  const std::string b = claude_body(other, rest);
  const auto la = scan_layout(a);
  const auto lb = scan_layout(b);
  ASSERT_TRUE(la && lb);
  EXPECT_EQ(prompt_start(a, *la, true).hash, prompt_start(b, *lb, true).hash);
  EXPECT_NE(prompt_start(a, *la, false).hash, prompt_start(b, *lb, false).hash);
  const std::string plain = claude_body(R"({"type":"text","text":"You are Claude Code."})");
  const auto lp = scan_layout(plain);
  ASSERT_TRUE(lp);
  EXPECT_EQ(prompt_start(a, *la, true).bytes, prompt_start(plain, *lp, true).bytes);
}

TEST(PromptStartTest, LaterTurnsKeepTheStartAndAnEditChangesIt) {
  const std::string sys(5000, 's');
  auto body = [&](std::string_view system, std::string_view messages) {
    return std::string(R"({"model":"m","system":")") + std::string(system) + R"(","messages":[)" +
           std::string(messages) + "]}";
  };
  const std::string t1 = body(sys, R"({"role":"user","content":"one"})");
  const std::string t2 = body(
      sys,
      R"({"role":"user","content":"one"},{"role":"assistant","content":"x"},{"role":"user","content":"two"})");
  std::string edited = sys;
  edited[10] = 'e';
  const std::string t3 = body(edited, R"({"role":"user","content":"one"})");
  auto start = [](const std::string& b) {
    auto l = scan_layout(b);
    EXPECT_TRUE(l);
    return prompt_start(b, *l, true);
  };
  EXPECT_EQ(start(t1).bytes, kPromptStartBytes);
  EXPECT_EQ(start(t1).hash, start(t2).hash);
  EXPECT_NE(start(t1).hash, start(t3).hash);
  // Only the first message is part of it: a short prompt's start does not grow with its history.
  const std::string s1 =
      R"({"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"a"}]})";
  const std::string s2 =
      R"({"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"a"},)"
      R"({"role":"assistant","content":"b"},{"role":"user","content":"c"}]})";
  EXPECT_EQ(start(s1).hash, start(s2).hash);
  EXPECT_EQ(start(s1).bytes, start(s2).bytes);
  EXPECT_LT(start(s1).bytes, kPromptStartBytes);
}

}  // namespace
}  // namespace warden::protocol
