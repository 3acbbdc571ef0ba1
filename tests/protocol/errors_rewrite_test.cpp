#include "protocol/error_body.hpp"
#include "protocol/rewrite.hpp"
#include "protocol/samples.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace warden::protocol {
namespace {

namespace json = boost::json;

TEST(ErrorsTest, ApiKindFromPath) {
  EXPECT_EQ(api_kind_from_path("/v1/chat/completions"), ApiKind::openai_chat);
  EXPECT_EQ(api_kind_from_path("/v1/completions"), ApiKind::openai_completions);
  EXPECT_EQ(api_kind_from_path("/v1/responses"), ApiKind::openai_responses);
  EXPECT_EQ(api_kind_from_path("/v1/messages?beta=true"), ApiKind::anthropic_messages);
  EXPECT_EQ(api_kind_from_path("/v1/messages/"), ApiKind::anthropic_messages);
  EXPECT_EQ(api_kind_from_path("/v1/messages/count_tokens?beta=true"), ApiKind::anthropic_count_tokens);
  EXPECT_EQ(api_kind_from_path("/v1/models"), std::nullopt);
  EXPECT_EQ(api_kind_from_path("/v1/messagesx"), std::nullopt);
  EXPECT_EQ(api_kind_from_path(""), std::nullopt);
  EXPECT_EQ(to_string(ApiKind::openai_responses), "openai_responses");
}

TEST(ErrorsTest, TypesPerStatus) {
  EXPECT_EQ(anthropic_error_type(400), "invalid_request_error");
  EXPECT_EQ(anthropic_error_type(401), "authentication_error");
  EXPECT_EQ(anthropic_error_type(404), "not_found_error");
  EXPECT_EQ(anthropic_error_type(413), "request_too_large");
  EXPECT_EQ(anthropic_error_type(429), "rate_limit_error");
  EXPECT_EQ(anthropic_error_type(500), "api_error");
  EXPECT_EQ(anthropic_error_type(502), "api_error");
  EXPECT_EQ(anthropic_error_type(503), "overloaded_error");
  EXPECT_EQ(anthropic_error_type(504), "timeout_error");
  EXPECT_EQ(openai_error_type(400), "invalid_request_error");
  EXPECT_EQ(openai_error_type(404), "invalid_request_error");
  EXPECT_EQ(openai_error_type(413), "invalid_request_error");
  EXPECT_EQ(openai_error_type(401), "authentication_error");
  EXPECT_EQ(openai_error_type(429), "rate_limit_error");
  EXPECT_EQ(openai_error_type(500), "server_error");
  EXPECT_EQ(openai_error_type(502), "server_error");
  EXPECT_EQ(openai_error_type(403), "permission_error");
  EXPECT_EQ(openai_error_type(503), "server_error");
  EXPECT_EQ(openai_error_type(504), "server_error");
}

TEST(ErrorsTest, BodiesAreValidJsonInEachFormat) {
  const std::string msg = "model \"x\"\nnot found \xff";  // quotes, newline and a stray byte
  auto a = json::parse(format_error(ApiKind::anthropic_messages, 404, msg));
  EXPECT_EQ(a.at("type"), "error");
  EXPECT_EQ(a.at("error").at("type"), "not_found_error");
  EXPECT_TRUE(a.at("error").at("message").as_string().starts_with("model \"x\"\nnot found"));
  auto o = json::parse(format_error(ApiKind::openai_chat, 404, "no such model", "model_not_found"));
  EXPECT_EQ(o.at("error").at("message"), "no such model");
  EXPECT_EQ(o.at("error").at("type"), "invalid_request_error");
  EXPECT_EQ(o.at("error").at("code"), "model_not_found");
  auto n = json::parse(format_error(ErrorFormat::openai, 502, "upstream failed"));
  EXPECT_TRUE(n.at("error").at("code").is_null());
  EXPECT_EQ(error_format_for(ApiKind::anthropic_count_tokens), ErrorFormat::anthropic);
  EXPECT_EQ(error_format_for(ApiKind::openai_responses), ErrorFormat::openai);
  EXPECT_EQ(describe(Errc::missing_model), "request body has no \"model\"");
  EXPECT_EQ(make_error_code(Errc::too_deep).message(), "too_deep");
  EXPECT_STREQ(make_error_code(Errc::too_deep).category().name(), "warden.protocol");
}

std::string rewrite(ApiKind api, std::string_view body, std::optional<std::string_view> model, bool usage) {
  auto r = rewrite_request(api, body, RewriteOptions{model, usage});
  EXPECT_TRUE(r) << body;
  if (r && !r->changed) {
    EXPECT_TRUE(r->pieces.empty());  // unchanged: the caller sends its input
    return std::string(body);
  }
  return r ? r->joined(body) : std::string();
}

TEST(RewriteTest, ReplacesModelKeepingEveryOtherByte) {
  const std::string body =
      R"( {"z":1, "model" : "client-name" ,"messages":[{"role":"user","content":"model"}],
    "cache_control":{"type":"ephemeral"}, "x":{"model":"nested"}} )";
  const std::string out = rewrite(ApiKind::openai_chat, body, "Qwen/Qwen3-4B", false);
  std::string expected = body;
  expected.replace(expected.find("\"client-name\""), 13, "\"Qwen/Qwen3-4B\"");
  EXPECT_EQ(out, expected);
  // Escaping of the new name.
  auto esc = json::parse(rewrite(ApiKind::openai_chat, R"({"model":"a"})", "we\"ird\\name", false));
  EXPECT_EQ(esc.at("model"), "we\"ird\\name");
  // Duplicate top-level model members are all replaced; an escaped key spelling is recognised.
  EXPECT_EQ(rewrite(ApiKind::openai_chat, R"({"model":"a","mod\u0065l":"b"})", "m", false),
            R"({"model":"m","mod\u0065l":"m"})");
}

TEST(RewriteTest, EscapesInsideStringsDoNotConfuseTheScanner) {
  EXPECT_EQ(rewrite(ApiKind::openai_chat, R"({"a":"x\\","model":"m"})", "n", false),
            R"({"a":"x\\","model":"n"})");
  EXPECT_EQ(rewrite(ApiKind::openai_chat, R"({"a":"q\"model\":\"z","model":"m"})", "n", false),
            R"({"a":"q\"model\":\"z","model":"n"})");
  EXPECT_EQ(rewrite(ApiKind::openai_chat, R"({"a":["}",{"b":"]\\\""}],"model":"m"})", "n", false),
            R"({"a":["}",{"b":"]\\\""}],"model":"n"})");
}

TEST(RewriteTest, IncludeUsageAddedOrMerged) {
  EXPECT_EQ(rewrite(ApiKind::openai_chat, R"({"model":"a","stream":true})", std::nullopt, true),
            R"({"model":"a","stream":true,"stream_options":{"include_usage":true}})");
  EXPECT_EQ(rewrite(ApiKind::openai_chat, "{\"stream\":true,\"model\":\"a\"\n}", "b", true),
            "{\"stream\":true,\"model\":\"b\",\"stream_options\":{\"include_usage\":true}\n}");
  EXPECT_EQ(rewrite(ApiKind::openai_completions, R"({"stream":true,"stream_options":{},"model":"a"})",
                    std::nullopt, true),
            R"({"stream":true,"stream_options":{"include_usage":true},"model":"a"})");
  EXPECT_EQ(
      rewrite(ApiKind::openai_chat, R"({"stream":true,"stream_options":{"continuous_usage_stats":true}})",
              std::nullopt, true),
      R"({"stream":true,"stream_options":{"continuous_usage_stats":true,"include_usage":true}})");
  EXPECT_EQ(rewrite(ApiKind::openai_chat, R"({"stream":true,"stream_options":{"include_usage":false,"x":1}})",
                    std::nullopt, true),
            R"({"stream":true,"stream_options":{"include_usage":true,"x":1}})");
  EXPECT_EQ(rewrite(ApiKind::openai_chat, R"({"stream":true,"stream_options":null})", std::nullopt, true),
            R"({"stream":true,"stream_options":{"include_usage":true}})");
  // Unchanged cases: not streaming, already true, other APIs.
  for (const auto& [api, body] : std::vector<std::pair<ApiKind, std::string>>{
           {ApiKind::openai_chat, R"({"stream":false,"model":"a"})"},
           {ApiKind::openai_chat, R"({"model":"a"})"},
           {ApiKind::openai_chat, R"({"stream":true,"stream_options":{"include_usage":true}})"},
           {ApiKind::anthropic_messages, R"({"stream":true,"model":"a"})"},
           {ApiKind::openai_responses, R"({"stream":true,"model":"a"})"}}) {
    auto r = rewrite_request(api, body, RewriteOptions{std::nullopt, true});
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->changed) << body;
    EXPECT_TRUE(r->pieces.empty()) << body;
  }
}

TEST(RewriteTest, ClaudeCodeBodyOnlyModelChanges) {
  const std::string body = samples::claude_code_body({});
  auto r = rewrite_request(ApiKind::anthropic_messages, body, RewriteOptions{"served", true});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->changed);
  auto before = json::parse(body).as_object();
  const std::string out = r->joined(body);
  auto after = json::parse(out).as_object();
  EXPECT_EQ(after.at("model"), "served");
  before["model"] = "served";
  EXPECT_EQ(before, after);
  const std::string old_model = "\"claude-sonnet-4-5-20250929\"";
  std::string expected = body;
  expected.replace(expected.find(old_model), old_model.size(), "\"served\"");
  EXPECT_EQ(out, expected);
  // The prompt is not copied: every piece but the new model name is a slice of the input.
  ASSERT_EQ(r->pieces.size(), 3u);
  EXPECT_FALSE(r->pieces[0].inserted);
  EXPECT_EQ(r->bytes(r->pieces[1], body), "\"served\"");
  EXPECT_FALSE(r->pieces[2].inserted);
  EXPECT_EQ(r->size, out.size());
}

std::string_view at(std::string_view body, ByteSpan s) {
  return body.substr(s.begin, s.end - s.begin);
}

TEST(RewriteTest, LayoutFromTheValidatingPass) {
  // Duplicates, an escaped key, whitespace, nested look-alikes and a replaced stream_options: the layout
  // names the top-level values (every "model", the last "stream" and "stream_options") and the members
  // of the last stream_options only.
  const std::string body =
      R"({ "model" : "a", "x":{"model":"n","stream":false}, "stream_options":{"include_usage":false},)"
      R"( "mod\u0065l":"b", "stream": true , "stream_options" : { "y" : [1,{"include_usage":1}] } })";
  auto l = scan_layout(body);
  ASSERT_TRUE(l);
  ASSERT_EQ(l->model.size(), 2u);
  EXPECT_EQ(at(body, l->model[0]), "\"a\"");
  EXPECT_EQ(at(body, l->model[1]), "\"b\"");
  ASSERT_TRUE(l->stream);
  EXPECT_EQ(at(body, *l->stream), "true");
  ASSERT_TRUE(l->stream_options);
  EXPECT_EQ(at(body, *l->stream_options), R"({ "y" : [1,{"include_usage":1}] })");
  EXPECT_FALSE(l->include_usage);  // the first stream_options had one; the last one has none at its top
  EXPECT_EQ(l->stream_options_members, 1u);
  EXPECT_EQ(body.substr(l->stream_options_last_end), " } }");
  EXPECT_EQ(l->top_members, 6u);
  EXPECT_EQ(body.substr(l->last_member_end), " }");
  // inspect_request reports the same layout as scan_layout.
  const std::vector<HeaderField> none;
  auto info = inspect_request(ApiKind::openai_chat, HeaderLookup{none}, body);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->layout.model.size(), 2u);
  EXPECT_EQ(info->layout.last_member_end, l->last_member_end);
  // And the rewrite built on it keeps every other byte.
  EXPECT_EQ(rewrite(ApiKind::openai_chat, body, "m", true),
            R"({ "model" : "m", "x":{"model":"n","stream":false}, "stream_options":{"include_usage":false},)"
            R"( "mod\u0065l":"m", "stream": true , "stream_options" : { "y" : [1,{"include_usage":1}])"
            R"(,"include_usage":true } })");
  // Not an object, or not JSON: no layout.
  EXPECT_FALSE(scan_layout("[1]"));
  EXPECT_FALSE(scan_layout(R"({"model":"a",})"));
}

TEST(RewriteTest, BadInputFailsCleanly) {
  for (std::string_view bad : {"", "[]", "{", R"({"model":)", R"({"model":"a"} x)", R"({"model" "a"})",
                               R"({"a":"unterminated})", R"({"stream":true,"stream_options":{"x":})"}) {
    auto r = rewrite_request(ApiKind::openai_chat, bad, RewriteOptions{"m", true});
    EXPECT_FALSE(r) << bad;
  }
}

}  // namespace
}  // namespace warden::protocol
