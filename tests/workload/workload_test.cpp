#include "workload/workload.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <regex>
#include <set>

#include "engine/chat_template.hpp"
#include "engine/tokenizer.hpp"
#include "workload/text.hpp"

namespace warden::workload {
namespace {

Conversation full_session(const Workload& w, std::uint64_t index) {
  Conversation c = w.start_session(index);
  while (!w.is_last_turn(c)) {
    w.add_reply(c, w.synthetic_reply(c, 17));
    w.next_turn(c);
  }
  return c;
}

TEST(Workload, SameSeedGivesByteIdenticalPrompts) {
  const Workload a(WorkloadConfig{});
  const Workload b(WorkloadConfig{});
  EXPECT_EQ(a.system_prompt(), b.system_prompt());
  EXPECT_EQ(a.device_id(), b.device_id());
  for (std::uint64_t i : {0ULL, 1ULL, 57ULL}) {
    const Conversation ca = full_session(a, i);
    const Conversation cb = full_session(b, i);
    EXPECT_EQ(ca.session_id, cb.session_id);
    ASSERT_EQ(ca.messages.size(), cb.messages.size());
    for (std::size_t m = 0; m < ca.messages.size(); ++m) {
      EXPECT_EQ(ca.messages[m].text, cb.messages[m].text);
    }
    EXPECT_EQ(render_anthropic(a, ca, "m").body, render_anthropic(b, cb, "m").body);
    EXPECT_EQ(render_openai(a, ca, "m").body, render_openai(b, cb, "m").body);
  }
}

TEST(Workload, DifferentSeedGivesDifferentPrompts) {
  WorkloadConfig c1;
  WorkloadConfig c2;
  c2.seed = 2;
  const Workload a(c1);
  const Workload b(c2);
  EXPECT_NE(a.system_prompt(), b.system_prompt());
  EXPECT_NE(a.device_id(), b.device_id());
  EXPECT_NE(a.start_session(0).messages[0].text, b.start_session(0).messages[0].text);
  EXPECT_NE(a.start_session(0).session_id, b.start_session(0).session_id);
}

TEST(Workload, SessionsShareTheSystemPromptButNotTheirFirstMessage) {
  const Workload w(WorkloadConfig{});
  std::set<std::string> ids;
  std::set<std::string> firsts;
  for (std::uint64_t i = 0; i < 50; ++i) {
    const Conversation c = w.start_session(i);
    ids.insert(c.session_id);
    firsts.insert(c.messages.at(0).text.substr(0, 64));
  }
  EXPECT_EQ(ids.size(), 50U);
  // Unique from the first characters on: sessions share no prefix beyond the system prompt.
  EXPECT_EQ(firsts.size(), 50U);
}

TEST(Workload, SessionIdLooksLikeAUuidV4) {
  const std::regex uuid("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  for (std::uint64_t i = 0; i < 20; ++i) {
    EXPECT_TRUE(std::regex_match(session_id(1, i), uuid)) << session_id(1, i);
  }
  const Workload w(WorkloadConfig{});
  EXPECT_TRUE(std::regex_match(w.device_id(), std::regex("^[0-9a-f]{64}$")));
}

void expect_near_target(std::size_t measured, std::size_t target, const char* what) {
  const double ratio = static_cast<double>(measured) / static_cast<double>(target);
  EXPECT_GE(ratio, 0.95) << what << ": " << measured << " tokens for a target of " << target;
  EXPECT_LE(ratio, 1.05) << what << ": " << measured << " tokens for a target of " << target;
}

TEST(Workload, SizesAreWithinFivePercentOfTheirTargetsWithTheEngineTokenizer) {
  for (const WorkloadConfig& cfg : {WorkloadConfig{}, WorkloadConfig{1000, 2500, 120, 4, 64, 0.0, 9, 0.0},
                                    WorkloadConfig{200, 50000, 2000, 3, 64, 0.0, 3, 0.0}}) {
    const Workload w(cfg);
    expect_near_target(engine::count_tokens(w.system_prompt()), cfg.system_tokens, "system prompt");
    for (std::uint64_t i = 0; i < 8; ++i) {
      Conversation c = w.start_session(i);
      expect_near_target(engine::count_tokens(c.messages[0].text), cfg.first_tokens, "first message");
      while (w.next_turn(c)) {
        expect_near_target(engine::count_tokens(c.messages.back().text), cfg.turn_tokens, "follow-up turn");
      }
      EXPECT_EQ(c.turn + 1, cfg.turns);
    }
  }
}

// Sizes are counted with the tokenizer while generating: they overshoot by at most a word, a period and a
// line break, however short the target.
TEST(Workload, GeneratedTextLandsOnItsTokenTarget) {
  for (std::size_t target : {1U, 7U, 40U, 400U, 7300U}) {
    for (std::uint64_t stream = 0; stream < 20; ++stream) {
      const std::size_t n = engine::count_tokens(make_text(stream, target, engine::count_tokens));
      EXPECT_GE(n, target);
      EXPECT_LE(n, target + 4) << "stream " << stream;
    }
  }
  // Character mode (chars_per_token > 0) sizes by characters instead.
  EXPECT_NEAR(static_cast<double>(make_text(3, 1000).size()), 1000.0, 20.0);
}

TEST(Workload, SyntheticReplyHasExactlyTheRequestedTokens) {
  const Workload w(WorkloadConfig{});
  const Conversation c = w.start_session(3);
  for (std::size_t n : {1U, 5U, 256U}) {
    EXPECT_EQ(engine::count_tokens(w.synthetic_reply(c, n)), n);
  }
}

TEST(Workload, NextTurnStopsAfterTheConfiguredTurns) {
  WorkloadConfig cfg;
  cfg.turns = 3;
  const Workload w(cfg);
  Conversation c = w.start_session(0);
  w.add_reply(c, "a");
  EXPECT_TRUE(w.next_turn(c));
  w.add_reply(c, "b");
  EXPECT_TRUE(w.next_turn(c));
  EXPECT_TRUE(w.is_last_turn(c));
  const std::size_t before = c.messages.size();
  EXPECT_FALSE(w.next_turn(c));
  EXPECT_EQ(c.messages.size(), before);
  ASSERT_EQ(c.messages.size(), 5U);
  EXPECT_EQ(c.messages[1].role, Role::assistant);
  EXPECT_EQ(c.messages[1].text, "a");
  EXPECT_EQ(c.messages[4].role, Role::user);
}

TEST(Workload, AnthropicRequestIsWhatClaudeCodeSends) {
  const Workload w(WorkloadConfig{});
  Conversation c = w.start_session(4);
  w.add_reply(c, "reply one");
  w.next_turn(c);
  const HttpRequestSpec spec = render_anthropic(w, c, "qwen");
  EXPECT_EQ(spec.target, "/v1/messages?beta=true");
  std::string header_sid;
  for (const auto& [k, v] : spec.headers) {
    if (k == "X-Claude-Code-Session-Id") {
      header_sid = v;
    }
  }
  EXPECT_EQ(header_sid, c.session_id);

  const boost::json::object body = boost::json::parse(spec.body).as_object();
  EXPECT_EQ(body.at("model").as_string(), "qwen");
  EXPECT_TRUE(body.at("stream").as_bool());
  EXPECT_EQ(body.at("max_tokens").to_number<std::int64_t>(), 256);
  const boost::json::array& system = body.at("system").as_array();
  ASSERT_EQ(system.size(), 1U);
  EXPECT_EQ(system[0].at("type").as_string(), "text");
  EXPECT_EQ(system[0].at("text").as_string(), w.system_prompt());
  const boost::json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 3U);
  EXPECT_EQ(messages[0].at("role").as_string(), "user");
  EXPECT_EQ(messages[1].at("role").as_string(), "assistant");
  EXPECT_EQ(messages[1].at("content").as_array()[0].at("text").as_string(), "reply one");
  // metadata.user_id is a JSON document inside a string.
  const boost::json::value& user_id = body.at("metadata").at("user_id");
  ASSERT_TRUE(user_id.is_string());
  const boost::json::object inner = boost::json::parse(user_id.as_string()).as_object();
  EXPECT_EQ(inner.at("session_id").as_string(), c.session_id);
  EXPECT_EQ(inner.at("account_uuid").as_string(), "");
  EXPECT_EQ(inner.at("device_id").as_string(), w.device_id());
}

TEST(Workload, OpenAiRequestCarriesPromptCacheKeyAndUsage) {
  const Workload w(WorkloadConfig{});
  const Conversation c = w.start_session(9);
  const HttpRequestSpec spec = render_openai(w, c, "qwen");
  EXPECT_EQ(spec.target, "/v1/chat/completions");
  const boost::json::object body = boost::json::parse(spec.body).as_object();
  EXPECT_EQ(body.at("prompt_cache_key").as_string(), c.session_id);
  EXPECT_TRUE(body.at("stream").as_bool());
  EXPECT_TRUE(body.at("stream_options").at("include_usage").as_bool());
  const boost::json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 2U);
  EXPECT_EQ(messages[0].at("role").as_string(), "system");
  EXPECT_EQ(messages[0].at("content").as_string(), w.system_prompt());
  EXPECT_EQ(messages[1].at("content").as_string(), c.messages[0].text);
}

// What makes the prefix cache work: each turn's prompt extends the previous one (with the reply).
TEST(Workload, EachTurnsPromptExtendsThePreviousOneInTheEngineTemplate) {
  for (bool anthropic : {true, false}) {
    const Workload w(WorkloadConfig{});
    Conversation c = w.start_session(2);
    engine::Tokens previous;
    do {
      const HttpRequestSpec spec = anthropic ? render_anthropic(w, c, "m") : render_openai(w, c, "m");
      auto tokens = engine::render_prompt(
          anthropic ? engine::ApiKind::anthropic_messages : engine::ApiKind::chat_completions, spec.body);
      ASSERT_TRUE(tokens.has_value()) << tokens.error().message;
      ASSERT_GT(tokens->size(), previous.size());
      EXPECT_TRUE(std::equal(previous.begin(), previous.end(), tokens->begin()));
      previous = *tokens;
      const std::string reply = w.synthetic_reply(c, 40);
      const engine::Tokens reply_tokens = engine::tokenize(reply);
      previous.insert(previous.end(), reply_tokens.begin(), reply_tokens.end());
      w.add_reply(c, reply);
    } while (w.next_turn(c));
  }
}

TEST(Workload, ValidateRefusesImpossibleConfigurations) {
  EXPECT_TRUE(validate(WorkloadConfig{}).has_value());
  WorkloadConfig c;
  c.turns = 0;
  EXPECT_FALSE(validate(c).has_value());
  c = WorkloadConfig{};
  c.think_time = -1;
  EXPECT_FALSE(validate(c).has_value());
  c = WorkloadConfig{};
  c.max_output = 0;
  EXPECT_FALSE(validate(c).has_value());
  c = WorkloadConfig{};
  c.first_tokens = 5'000'000;
  EXPECT_FALSE(validate(c).has_value());
  EXPECT_TRUE(preset("claude-code").has_value());
  EXPECT_FALSE(preset("nope").has_value());
}

// The system blocks of a rendered Anthropic request.
boost::json::array system_blocks(const Workload& w, const Conversation& c) {
  return boost::json::parse(render_anthropic(w, c, "m").body).as_object().at("system").as_array();
}

TEST(Workload, BillingLineIsTheFirstSystemBlockStablePerConversation) {
  WorkloadConfig cfg;
  cfg.billing_header = true;
  const Workload w(cfg);
  const std::regex line(
      R"(x-anthropic-billing-header: cc_version=2\.1\.332\.[0-9a-f]{3}; cc_entrypoint=sdk-cli;)");
  std::set<std::string> lines;
  for (std::uint64_t i = 0; i < 20; ++i) {
    Conversation c = w.start_session(i);
    const boost::json::array first = system_blocks(w, c);
    ASSERT_EQ(first.size(), 2U);
    const std::string billing(first[0].at("text").as_string());
    EXPECT_TRUE(std::regex_match(billing, line)) << billing;
    EXPECT_EQ(billing, billing_line(cfg.seed, i));
    EXPECT_EQ(first[1].at("text").as_string(), w.system_prompt());
    // Later turns of the conversation send the same line.
    w.add_reply(c, w.synthetic_reply(c, 5));
    w.next_turn(c);
    EXPECT_EQ(system_blocks(w, c)[0].at("text").as_string(), billing);
    lines.insert(billing);
  }
  // Three hex digits: 20 conversations almost surely show many different lines (fixed by the seed).
  EXPECT_GE(lines.size(), 15U);
  EXPECT_EQ(billing_line(1, 3), billing_line(1, 3));
  EXPECT_NE(billing_line(1, 3), billing_line(2, 3));
}

TEST(Workload, WithoutBillingLineTheSystemPromptIsTheOnlySystemBlock) {
  const Workload w(WorkloadConfig{});
  const boost::json::array blocks = system_blocks(w, w.start_session(0));
  ASSERT_EQ(blocks.size(), 1U);
  EXPECT_EQ(blocks[0].at("text").as_string(), w.system_prompt());
}

TEST(Tenants, SplitTheAgentsInProportionAndInterleaved) {
  const std::vector<std::size_t> split = split_between_tenants(26, {20, 6});
  EXPECT_EQ(std::count(split.begin(), split.end(), 0U), 20);
  EXPECT_EQ(std::count(split.begin(), split.end(), 1U), 6);
  EXPECT_LT(std::find(split.begin(), split.end(), 1U) - split.begin(), 5) << "spread, not a block at the end";
  EXPECT_EQ(split_between_tenants(4, {1, 1}), (std::vector<std::size_t>{0, 1, 0, 1}));
  const std::vector<std::size_t> thirds = split_between_tenants(10, {1, 1, 1});
  EXPECT_EQ(thirds.size(), 10U);
  for (const std::size_t t : {0U, 1U, 2U}) {
    EXPECT_GE(std::count(thirds.begin(), thirds.end(), t), 3);
  }
}

TEST(BillingLine, AnInteractiveSessionSaysTheInteractiveEntrypointItsSubagentsToo) {
  EXPECT_NE(billing_line(1, 3).find("cc_entrypoint=sdk-cli;"), std::string::npos);
  EXPECT_NE(billing_line(1, 3, "", true).find("cc_entrypoint=cli;"), std::string::npos);
  EXPECT_EQ(billing_line(1, 3, "", true).find("sdk-cli"), std::string::npos);
  const std::string sub = billing_line(1, 3, "agent-a", true);
  EXPECT_NE(sub.find("cc_entrypoint=cli;"), std::string::npos);
  EXPECT_NE(sub, billing_line(1, 3, "", true));  // its own suffix, as the headless one's
}

TEST(TaskStart, TheMainThreadsPromptWithNoToolResultSinceItsLastReply) {
  Conversation c;
  EXPECT_FALSE(is_task_start(c));
  c.messages.push_back(Message{.role = Role::user});
  EXPECT_TRUE(is_task_start(c));
  c.messages.back().results.push_back(ToolResult{});
  EXPECT_FALSE(is_task_start(c));
  c.agent_id = "a1";
  c.messages.back().results.clear();
  EXPECT_FALSE(is_task_start(c));  // a subagent's first request belongs to a task under way
}

}  // namespace
}  // namespace warden::workload
