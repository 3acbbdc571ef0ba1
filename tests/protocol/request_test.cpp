#include "protocol/request.hpp"
#include "protocol/rewrite.hpp"
#include "protocol/samples.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace warden::protocol {
namespace {

using samples::ClaudeMetadata;
using samples::ClaudeOptions;

RequestInfo inspect_ok(ApiKind api, std::vector<HeaderField> headers, std::string_view body) {
  auto r = inspect_request(api, HeaderLookup{std::span<const HeaderField>(headers)}, body);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
  return r ? *r : RequestInfo{};
}

Errc inspect_err(std::string_view body, ApiKind api = ApiKind::openai_chat) {
  auto r = inspect_request(api, HeaderLookup{}, body);
  EXPECT_FALSE(r.has_value());
  return r ? Errc::ok : static_cast<Errc>(r.error().value());
}

constexpr const char* kUuid = "0f6b8f9e-3c1e-4a7a-9d7e-2b1c5e8f4a10";

// What vLLM's lax parser takes as true for "stream" is a stream to the warden too, and gets
// stream_options.include_usage like `true` (its tokens are counted, its task ends).
TEST(RequestTest, AStreamFlagVllmReadsAsTrueIsAStream) {
  RewriteOptions o;
  o.force_include_usage = true;
  for (const char* value :
       {"true", "\"yes\"", "1", "\"true\"", "\"YES\"", "1.0", "\"1\"", "\"on\"", "\"\\u0079es\""}) {
    const std::string body = std::string(R"({"model":"m","stream":)") + value + "}";
    EXPECT_TRUE(inspect_ok(ApiKind::openai_chat, {}, body).stream) << value;
    const auto r = rewrite_request(ApiKind::openai_chat, body, o);
    ASSERT_TRUE(r) << value;
    EXPECT_EQ(r->joined(body), std::string(R"({"model":"m","stream":)") + value +
                                   R"(,"stream_options":{"include_usage":true}})")
        << value;
  }
  for (const char* value : {"false", "\"no\"", "0", "2", "null", "\"\"", "\"yess\"", "[true]", "{}"}) {
    const std::string body = std::string(R"({"model":"m","stream":)") + value + "}";
    EXPECT_FALSE(inspect_ok(ApiKind::openai_chat, {}, body).stream) << value;
    const auto r = rewrite_request(ApiKind::openai_chat, body, o);
    ASSERT_TRUE(r) << value;
    EXPECT_FALSE(r->changed) << value;
  }
}

TEST(RequestTest, ClaudeCodeHeaderWins) {
  ClaudeOptions o;
  o.metadata = ClaudeMetadata::json_string;
  o.session = "body-session";
  const auto body = samples::claude_code_body(o);
  auto info = inspect_ok(
      ApiKind::anthropic_messages,
      {{"anthropic-version", "2023-06-01"}, {"X-Claude-Code-Session-Id", kUuid}, {"x-app", "cli"}}, body);
  EXPECT_EQ(info.session_source, SessionSource::claude_code_header);
  EXPECT_EQ(info.session_key, kUuid);
  EXPECT_EQ(info.model, "claude-sonnet-4-5-20250929");
  EXPECT_TRUE(info.stream);
  EXPECT_EQ(info.max_tokens, 32000);
  EXPECT_NE(info.session_hash, 0u);
}

TEST(RequestTest, ClaudeCodeMetadataJsonStringForm) {
  ClaudeOptions o;
  o.metadata = ClaudeMetadata::json_string;
  auto info = inspect_ok(ApiKind::anthropic_messages, {}, samples::claude_code_body(o));
  EXPECT_EQ(info.session_source, SessionSource::metadata_user_id);
  EXPECT_EQ(info.session_key, kUuid);
}

TEST(RequestTest, ClaudeCodeMetadataLegacyForm) {
  ClaudeOptions o;
  o.metadata = ClaudeMetadata::legacy;
  auto info = inspect_ok(ApiKind::anthropic_messages, {}, samples::claude_code_body(o));
  EXPECT_EQ(info.session_source, SessionSource::metadata_user_id);
  EXPECT_EQ(info.session_key, kUuid);
}

TEST(RequestTest, HeaderAndBodyGiveTheSameKey) {
  ClaudeOptions o;
  const auto body = samples::claude_code_body(o);
  auto a = inspect_ok(ApiKind::anthropic_messages, {{"x-claude-code-session-id", kUuid}}, body);
  auto b = inspect_ok(ApiKind::anthropic_messages, {}, body);
  EXPECT_EQ(a.session_key, b.session_key);
  EXPECT_EQ(a.session_hash, b.session_hash);
}

TEST(RequestTest, UserIdForms) {
  EXPECT_EQ(session_from_user_id(R"({"device_id":"ab","account_uuid":"","session_id":"s-1"})"), "s-1");
  EXPECT_EQ(session_from_user_id("user_abcdef_account_1234-5678_session_s-2"), "s-2");
  EXPECT_EQ(session_from_user_id("user_abcdef_account__session_s-3"), "s-3");
  EXPECT_EQ(session_from_user_id("some-end-user"), std::nullopt);
  EXPECT_EQ(session_from_user_id(R"({"device_id":"ab"})"), std::nullopt);
  EXPECT_EQ(session_from_user_id(R"({"session_id":12})"), std::nullopt);
  EXPECT_EQ(session_from_user_id(R"({"session_id":)"), std::nullopt);
  EXPECT_EQ(session_from_user_id("user_abc_account__session_"), std::nullopt);
}

TEST(RequestTest, UnrecognisedUserIdFallsBackToFingerprint) {
  const std::string body =
      R"({"model":"m","metadata":{"user_id":"alice"},"messages":[{"role":"user","content":"hi"}]})";
  auto info = inspect_ok(ApiKind::anthropic_messages, {}, body);
  EXPECT_EQ(info.session_source, SessionSource::fingerprint);
  EXPECT_TRUE(info.session_key.starts_with("fp:"));
}

TEST(RequestTest, CodexPromptCacheKeyAndHeader) {
  const auto body = samples::codex_body(kUuid);
  auto body_only = inspect_ok(ApiKind::openai_responses, {}, body);
  EXPECT_EQ(body_only.session_source, SessionSource::prompt_cache_key);
  EXPECT_EQ(body_only.session_key, kUuid);
  EXPECT_EQ(body_only.model, "gpt-5-codex");
  EXPECT_TRUE(body_only.stream);

  auto with_header = inspect_ok(ApiKind::openai_responses, {{"session-id", kUuid}, {"thread-id", "t"}}, body);
  EXPECT_EQ(with_header.session_source, SessionSource::codex_header);
  EXPECT_EQ(with_header.session_key, kUuid);
  EXPECT_EQ(with_header.session_hash, body_only.session_hash);

  auto old_header = inspect_ok(ApiKind::openai_responses, {{"Session_Id", "older"}}, body);
  EXPECT_EQ(old_header.session_source, SessionSource::codex_header);
  EXPECT_EQ(old_header.session_key, "older");
}

TEST(RequestTest, HeaderPriorityOrder) {
  ClaudeOptions o;
  const auto body = samples::claude_code_body(o);
  std::vector<HeaderField> h = {
      {"session-id", "codex"}, {"X-Claude-Code-Session-Id", "claude"}, {"x-warden-session", "warden"}};
  EXPECT_EQ(inspect_ok(ApiKind::anthropic_messages, h, body).session_key, "warden");
  h.pop_back();
  EXPECT_EQ(inspect_ok(ApiKind::anthropic_messages, h, body).session_key, "claude");
  h.pop_back();
  auto codex = inspect_ok(ApiKind::anthropic_messages, h, body);
  EXPECT_EQ(codex.session_key, "codex");
  EXPECT_EQ(codex.session_source, SessionSource::codex_header);
  // prompt_cache_key beats metadata.user_id.
  const std::string both =
      R"({"metadata":{"user_id":"user_a_account__session_meta"},"prompt_cache_key":"pck","model":"m"})";
  auto b = inspect_ok(ApiKind::openai_chat, {}, both);
  EXPECT_EQ(b.session_source, SessionSource::prompt_cache_key);
  EXPECT_EQ(b.session_key, "pck");
  // Empty or blank header values fall through to the next source.
  auto blank = inspect_ok(ApiKind::openai_chat, {{"X-Warden-Session", "  "}, {"session_id", " s9 "}}, both);
  EXPECT_EQ(blank.session_source, SessionSource::codex_header);
  EXPECT_EQ(blank.session_key, "s9");
}

TEST(RequestTest, LongKeysAreHashed) {
  const std::string long_key(1000, 'k');
  auto info = inspect_ok(ApiKind::openai_chat, {{"X-Warden-Session", long_key}}, R"({"model":"m"})");
  EXPECT_EQ(info.session_key.size(), 2u + 16u);
  EXPECT_TRUE(info.session_key.starts_with("h:"));
  auto again = inspect_ok(ApiKind::openai_chat, {{"X-Warden-Session", long_key}}, R"({"model":"m"})");
  EXPECT_EQ(info.session_key, again.session_key);
}

TEST(RequestTest, FingerprintStableAcrossTurnsOfOneConversation) {
  std::set<std::string> keys;
  for (int turn = 1; turn <= 6; ++turn) {
    auto info = inspect_ok(ApiKind::openai_chat, {}, samples::openai_chat_body(turn, 42));
    EXPECT_EQ(info.session_source, SessionSource::fingerprint);
    keys.insert(info.session_key);
  }
  EXPECT_EQ(keys.size(), 1u);
}

TEST(RequestTest, FingerprintDiffersAcrossConversations) {
  std::set<std::string> keys;
  for (std::uint64_t conv = 1; conv <= 50; ++conv) {
    keys.insert(inspect_ok(ApiKind::openai_chat, {}, samples::openai_chat_body(3, conv)).session_key);
  }
  EXPECT_EQ(keys.size(), 50u);
  // Same first user message, different system prompt: different conversation.
  auto a = inspect_ok(ApiKind::openai_chat, {}, samples::openai_chat_body(1, 5, "You are A."));
  auto b = inspect_ok(ApiKind::openai_chat, {}, samples::openai_chat_body(1, 5, "You are B."));
  EXPECT_NE(a.session_key, b.session_key);
}

TEST(RequestTest, FingerprintClaudeCodeTurnsIgnoreMovingCacheControl) {
  std::set<std::string> keys;
  std::set<std::string> other;
  for (int turn = 1; turn <= 6; ++turn) {
    ClaudeOptions o;
    o.metadata = ClaudeMetadata::none;
    o.turns = turn;
    keys.insert(inspect_ok(ApiKind::anthropic_messages, {}, samples::claude_code_body(o)).session_key);
    o.seed = 2;
    other.insert(inspect_ok(ApiKind::anthropic_messages, {}, samples::claude_code_body(o)).session_key);
  }
  EXPECT_EQ(keys.size(), 1u);
  EXPECT_EQ(other.size(), 1u);
  EXPECT_NE(*keys.begin(), *other.begin());
}

TEST(RequestTest, FingerprintIgnoresWhitespaceEscapesAndTopLevelOrder) {
  const std::string a =
      R"({"model":"m","tools":[{"name":"t"}],"messages":[{"role":"system","content":"S"},{"role":"user","content":"héllo"}]})";
  const std::string b =
      "{ \"messages\" : [ { \"role\" : \"system\", \"content\" : \"S\" } ,\n"
      " {\"role\":\"user\",\"content\":\"h\\u00e9llo\"}, {\"role\":\"assistant\",\"content\":\"x\"}],"
      "\"model\":\"m\", \"tools\" : [ {\"name\":\"t\"} ] }";
  auto ia = inspect_ok(ApiKind::openai_chat, {}, a);
  auto ib = inspect_ok(ApiKind::openai_chat, {}, b);
  EXPECT_EQ(ia.session_source, SessionSource::fingerprint);
  EXPECT_EQ(ia.session_key, ib.session_key);
}

TEST(RequestTest, FingerprintCodexWithoutKeyStableAcrossTurns) {
  std::set<std::string> keys;
  for (int turn = 1; turn <= 4; ++turn) {
    auto body = boost::json::parse(samples::codex_body("x", turn)).as_object();
    body.erase("prompt_cache_key");
    auto info = inspect_ok(ApiKind::openai_responses, {}, boost::json::serialize(body));
    EXPECT_EQ(info.session_source, SessionSource::fingerprint);
    keys.insert(info.session_key);
  }
  EXPECT_EQ(keys.size(), 1u);
}

TEST(RequestTest, CompletionsPromptFingerprintUsesItsStart) {
  const std::string start = samples::filler(5000, 3);
  auto body = [](const std::string& prompt) {
    return boost::json::serialize(boost::json::object{{"model", "m"}, {"prompt", prompt}});
  };
  auto a = inspect_ok(ApiKind::openai_completions, {}, body(start + "turn one"));
  auto b = inspect_ok(ApiKind::openai_completions, {}, body(start + "turn one. turn two"));
  auto c = inspect_ok(ApiKind::openai_completions, {}, body("different" + start));
  EXPECT_EQ(a.session_key, b.session_key);
  EXPECT_NE(a.session_key, c.session_key);
  auto tokens = inspect_ok(ApiKind::openai_completions, {}, R"({"model":"m","prompt":[1,2,3,4]})");
  EXPECT_EQ(tokens.session_source, SessionSource::fingerprint);
  EXPECT_EQ(tokens.prompt_tokens_estimate, 4u);
}

TEST(RequestTest, PromptEstimateDoesNotDependOnHeaders) {
  const std::string body = R"({"model":"m","messages":[{"role":"user","content":"line\nline\u00e9"}]})";
  auto with = inspect_ok(ApiKind::openai_chat, {{"X-Warden-Session", "s"}}, body);
  auto without = inspect_ok(ApiKind::openai_chat, {}, body);
  EXPECT_EQ(with.prompt_bytes, without.prompt_bytes);
  EXPECT_EQ(with.prompt_tokens_estimate, without.prompt_tokens_estimate);
}

TEST(RequestTest, NoPromptNoSession) {
  auto info = inspect_ok(ApiKind::openai_chat, {}, R"({"model":"m","messages":[]})");
  EXPECT_EQ(info.session_source, SessionSource::none);
  EXPECT_TRUE(info.session_key.empty());
  EXPECT_EQ(info.session_hash, 0u);
}

TEST(RequestTest, StreamOptionsAndLimits) {
  auto a = inspect_ok(
      ApiKind::openai_chat, {},
      R"({"stream_options":{"include_usage":true},"model":"m","stream":true,"max_completion_tokens":99})");
  EXPECT_TRUE(a.stream);
  EXPECT_TRUE(a.include_usage);
  EXPECT_EQ(a.max_tokens, 99);
  auto b = inspect_ok(ApiKind::openai_chat, {},
                      R"({"model":"m","stream":false,"stream_options":{"include_usage":false}})");
  EXPECT_FALSE(b.stream);
  EXPECT_FALSE(b.include_usage);
  EXPECT_EQ(b.max_tokens, std::nullopt);
  // Nested "stream"/"model" members do not count: only top-level ones.
  auto c = inspect_ok(ApiKind::openai_chat, {},
                      R"({"model":"m","x":{"stream":true,"model":"n","include_usage":true}})");
  EXPECT_FALSE(c.stream);
  EXPECT_FALSE(c.include_usage);
  EXPECT_EQ(c.model, "m");
  auto d = inspect_ok(ApiKind::openai_responses, {}, R"({"model":"m","max_output_tokens":7})");
  EXPECT_EQ(d.max_tokens, 7);
}

TEST(RequestTest, DuplicateModelLastWins) {
  EXPECT_EQ(inspect_ok(ApiKind::openai_chat, {}, R"({"model":"a","model":"b"})").model, "b");
  EXPECT_EQ(inspect_err(R"({"model":"a","model":3})"), Errc::model_not_string);
}

TEST(RequestTest, PromptEstimate) {
  auto info = inspect_ok(
      ApiKind::openai_chat, {},
      R"({"model":"m","messages":[{"role":"user","content":")" + std::string(4000, 'a') + R"("}]})");
  // 4000 chars of content plus small keys/role: about 1000 tokens.
  EXPECT_GE(info.prompt_tokens_estimate, 1000u);
  EXPECT_LE(info.prompt_tokens_estimate, 1010u);
  ClaudeOptions o;
  const auto body = samples::claude_code_body(o);
  auto claude = inspect_ok(ApiKind::anthropic_messages, {}, body);
  EXPECT_GT(claude.prompt_tokens_estimate, body.size() / 5);
  EXPECT_LT(claude.prompt_tokens_estimate, body.size() / 4 + 1);
}

TEST(RequestTest, Pins) {
  const std::string body = R"({"model":"m"})";
  auto valid = inspect_ok(ApiKind::openai_chat, {{"X-Warden-Replica", " 3 "}}, body);
  EXPECT_EQ(valid.pin.state, PinState::valid);
  EXPECT_EQ(valid.pin.replica, 3);
  EXPECT_EQ(valid.pin.source, PinSource::warden_replica);
  EXPECT_TRUE(valid.pin.in_range(4));
  EXPECT_FALSE(valid.pin.in_range(3));

  auto dp = inspect_ok(ApiKind::openai_chat, {{"x-data-parallel-rank", "0"}}, body);
  EXPECT_EQ(dp.pin.state, PinState::valid);
  EXPECT_EQ(dp.pin.replica, 0);
  EXPECT_EQ(dp.pin.source, PinSource::data_parallel_rank);

  auto both =
      inspect_ok(ApiKind::openai_chat, {{"X-Data-Parallel-Rank", "1"}, {"x-warden-replica", "2"}}, body);
  EXPECT_EQ(both.pin.replica, 2);
  EXPECT_EQ(both.pin.source, PinSource::warden_replica);

  EXPECT_EQ(inspect_ok(ApiKind::openai_chat, {}, body).pin.state, PinState::absent);
  for (const char* bad : {"", "-1", "1.5", "abc", "1 2", "99999999999999999999", "+1", "0x1"}) {
    auto r = inspect_ok(ApiKind::openai_chat, {{"X-Warden-Replica", bad}}, body);
    EXPECT_EQ(r.pin.state, PinState::invalid) << bad;
    EXPECT_FALSE(r.pin.in_range(4)) << bad;
  }
}

TEST(RequestTest, CallableHeaderLookup) {
  auto lookup = [](std::string_view name) -> std::optional<std::string_view> {
    if (name == "x-warden-session") {  // callers get lower-case names
      return "from-callable";
    }
    return std::nullopt;
  };
  auto r = inspect_request(ApiKind::openai_chat, lookup, R"({"model":"m"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->session_key, "from-callable");
}

TEST(RequestTest, ValidationErrors) {
  EXPECT_EQ(inspect_err(""), Errc::malformed_json);
  EXPECT_EQ(inspect_err("{"), Errc::malformed_json);
  EXPECT_EQ(inspect_err(R"({"model":"m"} x)"), Errc::malformed_json);
  EXPECT_EQ(inspect_err(R"({"model":"m",})"), Errc::malformed_json);
  EXPECT_EQ(inspect_err(R"({"model":"m\q"})"), Errc::malformed_json);
  EXPECT_EQ(inspect_err("{\"model\":\"\xff\xfe\"}"), Errc::malformed_json);
  EXPECT_EQ(inspect_err(R"([{"model":"m"}])"), Errc::body_not_object);
  EXPECT_EQ(inspect_err(R"("model")"), Errc::body_not_object);
  EXPECT_EQ(inspect_err("42"), Errc::body_not_object);
  EXPECT_EQ(inspect_err(R"({"messages":[]})"), Errc::missing_model);
  EXPECT_EQ(inspect_err(R"({"model":""})"), Errc::missing_model);
  EXPECT_EQ(inspect_err(R"({"model":null})"), Errc::model_not_string);
  EXPECT_EQ(inspect_err(R"({"model":["a"]})"), Errc::model_not_string);
  std::string deep = R"({"model":"m","x":)";
  for (int i = 0; i < 5000; ++i) {
    deep += '[';
  }
  EXPECT_EQ(inspect_err(deep), Errc::too_deep);
  // Trailing whitespace is fine.
  EXPECT_TRUE(inspect_request(ApiKind::openai_chat, HeaderLookup{}, "{\"model\":\"m\"}\r\n "));
}

TEST(RequestTest, LargeBody) {
  // Tens of MiB: one huge message.
  std::string body = R"({"model":"m","messages":[{"role":"user","content":")";
  body.append(32u << 20, 'x');
  body += R"("}],"stream":true})";
  auto info = inspect_ok(ApiKind::openai_chat, {}, body);
  EXPECT_TRUE(info.stream);
  EXPECT_EQ(info.session_source, SessionSource::fingerprint);
  EXPECT_GE(info.prompt_tokens_estimate, (32u << 20) / 4);
}

}  // namespace
}  // namespace warden::protocol
