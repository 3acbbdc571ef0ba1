// Thread identity from each client's headers, tools offered, and the head of the prompt start.
#include <gtest/gtest.h>

#include <vector>

#include "protocol/request.hpp"
#include "protocol/samples.hpp"

namespace warden::protocol {
namespace {

constexpr const char* kSession = "0f6b8f9e-3c1e-4a7a-9d7e-2b1c5e8f4a10";

RequestInfo inspect(ApiKind api, std::vector<HeaderField> headers, std::string_view body) {
  auto r = inspect_request(api, HeaderLookup{std::span<const HeaderField>(headers)}, body);
  EXPECT_TRUE(r.has_value());
  return r ? *r : RequestInfo{};
}

RequestInfo claude(std::vector<HeaderField> headers) {
  static const std::string body = samples::claude_code_body({});
  headers.insert(headers.begin(), {"X-Claude-Code-Session-Id", kSession});
  return inspect(ApiKind::anthropic_messages, std::move(headers), body);
}

TEST(ThreadKey, ClaudeCodeMainThreadIsTheSession) {
  const RequestInfo main = claude({});
  EXPECT_EQ(main.thread_source, ThreadSource::main);
  EXPECT_TRUE(main.thread_id.empty());
  EXPECT_EQ(main.thread_hash, main.session_hash);
  EXPECT_EQ(main.parent_hash, 0u);
  EXPECT_TRUE(main.offers_tools);
}

TEST(ThreadKey, ClaudeCodeSubagentsAreThreadsOfTheSession) {
  const RequestInfo main = claude({});
  const RequestInfo a = claude({{"X-Claude-Code-Agent-Id", "a13cdae02ca695de0"}});
  const RequestInfo b = claude({{"x-claude-code-agent-id", " b13cdae02ca695de0 "}});
  EXPECT_EQ(a.thread_source, ThreadSource::claude_code_agent);
  EXPECT_EQ(a.thread_id, "a13cdae02ca695de0");
  EXPECT_EQ(a.session_hash, main.session_hash);  // the same session...
  EXPECT_NE(a.thread_hash, main.thread_hash);    // ...another thread
  EXPECT_NE(a.thread_hash, b.thread_hash);
  EXPECT_EQ(b.thread_id, "b13cdae02ca695de0");  // trimmed
  EXPECT_EQ(a.parent_hash, main.thread_hash);   // no parent named: the main thread started it
  // A nested subagent names its parent.
  const RequestInfo c =
      claude({{"X-Claude-Code-Agent-Id", "c1"}, {"X-Claude-Code-Parent-Agent-Id", "a13cdae02ca695de0"}});
  EXPECT_EQ(c.parent_hash, a.thread_hash);
  // The same agent id in another session is another thread.
  const std::string other_body = samples::claude_code_body({});
  const RequestInfo elsewhere = inspect(
      ApiKind::anthropic_messages,
      {{"X-Claude-Code-Session-Id", "other"}, {"X-Claude-Code-Agent-Id", "a13cdae02ca695de0"}}, other_body);
  EXPECT_NE(elsewhere.thread_hash, a.thread_hash);
  // An empty agent id is the main thread.
  EXPECT_EQ(claude({{"X-Claude-Code-Agent-Id", "  "}}).thread_hash, main.thread_hash);
}

TEST(ThreadKey, CodexSubAgentsByThreadId) {
  const std::string body = samples::codex_body(kSession);
  // The first thread's id is the session id: the main thread.
  const RequestInfo root =
      inspect(ApiKind::openai_responses, {{"session-id", kSession}, {"thread-id", kSession}}, body);
  EXPECT_EQ(root.thread_source, ThreadSource::main);
  EXPECT_EQ(root.thread_hash, root.session_hash);
  const RequestInfo child = inspect(
      ApiKind::openai_responses,
      {{"session-id", kSession}, {"thread-id", "child-1"}, {"x-codex-parent-thread-id", kSession}}, body);
  EXPECT_EQ(child.thread_source, ThreadSource::codex_thread);
  EXPECT_EQ(child.thread_id, "child-1");
  EXPECT_EQ(child.session_hash, root.session_hash);
  EXPECT_NE(child.thread_hash, root.thread_hash);
  EXPECT_EQ(child.parent_hash, root.thread_hash);
  const RequestInfo underscore =
      inspect(ApiKind::openai_responses, {{"session_id", kSession}, {"thread_id", "child-1"}}, body);
  EXPECT_EQ(underscore.thread_hash, child.thread_hash);
}

TEST(ThreadKey, ExplicitThreadHeaderWinsAndNoSessionMeansNoThread) {
  const RequestInfo w = claude({{"X-Warden-Thread", "t1"}, {"X-Claude-Code-Agent-Id", "a1"}});
  EXPECT_EQ(w.thread_source, ThreadSource::warden_header);
  EXPECT_EQ(w.thread_id, "t1");
  const RequestInfo none = inspect(ApiKind::openai_chat, {{"X-Warden-Thread", "t1"}}, R"({"model":"m"})");
  EXPECT_EQ(none.session_source, SessionSource::none);
  EXPECT_TRUE(none.thread_id.empty());
  EXPECT_EQ(none.thread_hash, 0u);
}

TEST(ThreadKey, ToolsOfferedOnlyWhenTheArrayHasAnElement) {
  const auto offers = [](std::string_view body) {
    return inspect(ApiKind::openai_chat, {}, body).offers_tools;
  };
  EXPECT_TRUE(offers(R"({"model":"m","messages":[],"tools":[{"type":"function"}]})"));
  EXPECT_FALSE(offers(R"({"model":"m","messages":[],"tools":[ ]})"));
  EXPECT_FALSE(offers(R"({"model":"m","messages":[],"tools":null})"));
  EXPECT_FALSE(offers(R"({"model":"m","messages":[]})"));
}

TEST(ThreadKey, ThePromptStartsHeadIsSystemAndToolsAlone) {
  const auto start = [](std::string_view body) {
    const auto r = scan_layout(body);
    EXPECT_TRUE(r.has_value());
    return prompt_start(body, *r, false);
  };
  const PromptStart a =
      start(R"({"model":"m","system":"s","tools":[1],"messages":[{"role":"user","content":"x"}]})");
  const PromptStart b =
      start(R"({"model":"m","system":"s","tools":[1],"messages":[{"role":"user","content":"y"}]})");
  const PromptStart c =
      start(R"({"model":"m","system":"t","tools":[1],"messages":[{"role":"user","content":"x"}]})");
  EXPECT_NE(a.hash, b.hash);
  EXPECT_EQ(a.head_hash, b.head_hash);  // a summary in place of the history keeps the head
  EXPECT_EQ(a.head_bytes, b.head_bytes);
  EXPECT_LT(a.head_bytes, a.bytes);
  EXPECT_NE(a.head_hash, c.head_hash);
}

}  // namespace
}  // namespace warden::protocol

namespace warden::protocol {
namespace {

TEST(FirstMessage, TheFirstMessagesDigestStaysWhileAConversationGrowsAndTellsConversationsApart) {
  const auto first = [](std::string_view body, ApiKind api = ApiKind::anthropic_messages) {
    return inspect(api, {{"X-Claude-Code-Session-Id", kSession}}, body).first_message_hash;
  };
  const std::uint64_t turn1 = first(R"({"model":"m","messages":[{"role":"user","content":"fix the bug"}]})");
  const std::uint64_t turn2 = first(R"({"model":"m","messages":[{"role":"user","content":"fix the bug"},
      {"role":"assistant","content":"done"},{"role":"user","content":"now the tests"}]})");
  EXPECT_NE(turn1, 0U);
  EXPECT_EQ(turn1, turn2) << "one conversation, growing";
  EXPECT_NE(turn1, first(R"({"model":"m","messages":[{"role":"user","content":"write the docs"}]})"))
      << "another agent's conversation under the same id";
  EXPECT_EQ(first(R"({"model":"m","messages":[]})"), 0U);
  EXPECT_NE(first(R"({"model":"m","input":[{"role":"user","content":"go"}]})", ApiKind::openai_responses),
            0U);
  EXPECT_NE(first(R"({"model":"m","input":"go"})", ApiKind::openai_responses), 0U) << "a string input";
}

}  // namespace
}  // namespace warden::protocol
