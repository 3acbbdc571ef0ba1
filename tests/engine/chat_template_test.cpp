#include "engine/chat_template.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <string>

#include "engine/engine.hpp"
#include "engine/presets.hpp"
#include "run_one.hpp"

namespace warden::engine {
namespace {

namespace json = boost::json;

Tokens cat(std::initializer_list<Tokens> parts) {
  Tokens out;
  for (const auto& p : parts) {
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

Tokens ok(const Result<Tokens>& r) {
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? *r : Tokens{};
}

bool starts_with(const Tokens& a, const Tokens& prefix) {
  return a.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), a.begin());
}

// A reply the engine would generate for `prompt`, as tokens.
Tokens reply_for(const Tokens& prompt, int n) {
  EngineConfig c;
  c.num_gpu_blocks = 4096;
  RequestSpec spec;
  spec.id = 1;
  spec.prompt = prompt;
  spec.max_tokens = n;
  return test::run_one(c, 17, std::move(spec)).tokens;
}

TEST(ChatTemplate, OpenAiChatExactLayout) {
  const auto body = json::parse(R"({"model":"m","messages":[
      {"role":"system","content":"You are terse."},{"role":"user","content":"Hi there"}]})");
  const Tokens expected = cat({{kImStart},
                               tokenize("system"),
                               {kNewline},
                               tokenize("You are terse."),
                               {kImEnd, kNewline, kImStart},
                               tokenize("user"),
                               {kNewline},
                               tokenize("Hi there"),
                               {kImEnd, kNewline, kImStart},
                               tokenize("assistant"),
                               {kNewline}});
  EXPECT_EQ(ok(render_chat(body)), expected);
  EXPECT_EQ(expected, cat({render_message("system", "You are terse."), render_message("user", "Hi there"),
                           generation_prompt()}));
}

TEST(ChatTemplate, AllFourApisAgreeOnTheSameConversation) {
  const Tokens chat = ok(render_chat(json::parse(
      R"({"messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"hello"}]}]})")));
  const Tokens anthropic = ok(render_anthropic(json::parse(
      R"({"system":[{"type":"text","text":"S"}],"messages":[{"role":"user","content":"hello"}]})")));
  const Tokens responses = ok(render_responses(json::parse(R"({"instructions":"S","input":"hello"})")));
  const Tokens responses_items = ok(render_responses(json::parse(
      R"({"instructions":"S","input":[{"role":"user","content":[{"type":"input_text","text":"hello"}]}]})")));
  EXPECT_EQ(chat, anthropic);
  EXPECT_EQ(chat, responses);
  EXPECT_EQ(chat, responses_items);
  const auto completions = render_completions(json::parse(R"({"prompt":"hello"})"));
  ASSERT_TRUE(completions);
  EXPECT_EQ(completions->at(0), tokenize("hello"));  // raw, no template
}

// The property the whole project leans on: turn N+1's prompt = turn N's prompt + reply + new messages.
TEST(ChatTemplate, NextTurnStartsWithPromptPlusReplyForEveryApi) {
  // OpenAI chat
  {
    json::object b1 = json::parse(R"({"messages":[{"role":"system","content":"Be brief."},
        {"role":"user","content":"Explain caching."}]})")
                          .as_object();
    const Tokens p1 = ok(render_chat(b1));
    const Tokens reply = reply_for(p1, 60);
    json::object b2 = b1;
    b2["messages"].as_array().push_back(json::object{{"role", "assistant"}, {"content", detokenize(reply)}});
    b2["messages"].as_array().push_back(json::object{{"role", "user"}, {"content", "And eviction?"}});
    EXPECT_TRUE(starts_with(ok(render_chat(b2)), cat({p1, reply})));
  }
  // Anthropic, assistant reply as a text block, user turns as block arrays
  {
    json::object b1 = json::parse(R"({"system":"Be brief.","messages":[{"role":"user","content":[
        {"type":"text","text":"Explain caching.","cache_control":{"type":"ephemeral"}}]}]})")
                          .as_object();
    const Tokens p1 = ok(render_anthropic(b1));
    const Tokens reply = reply_for(p1, 60);
    json::object b2 = b1;
    b2["messages"].as_array().push_back(
        json::parse(R"({"role":"assistant","content":[{"type":"text","text":)" +
                    json::serialize(json::string(detokenize(reply))) + "}]}"));
    b2["messages"].as_array().push_back(json::object{{"role", "user"}, {"content", "And eviction?"}});
    EXPECT_TRUE(starts_with(ok(render_anthropic(b2)), cat({p1, reply})));
  }
  // Responses, assistant reply as an output message item
  {
    json::object b1 = json::parse(R"({"instructions":"Be brief.","input":[
        {"type":"message","role":"user","content":[{"type":"input_text","text":"Explain caching."}]}]})")
                          .as_object();
    const Tokens p1 = ok(render_responses(b1));
    const Tokens reply = reply_for(p1, 60);
    json::object b2 = b1;
    json::object out_item{{"type", "message"}, {"role", "assistant"}};
    out_item["content"] = json::array{json::object{{"type", "output_text"}, {"text", detokenize(reply)}}};
    b2["input"].as_array().push_back(out_item);
    b2["input"].as_array().push_back(json::object{{"role", "user"}, {"content", "And eviction?"}});
    EXPECT_TRUE(starts_with(ok(render_responses(b2)), cat({p1, reply})));
  }
  // Completions: the client appends the reply text to its prompt itself.
  {
    const auto p1 = render_completions(json::parse(R"({"prompt":"Once upon a time"})"));
    ASSERT_TRUE(p1);
    const Tokens reply = reply_for(p1->at(0), 30);
    json::object b2{{"prompt", "Once upon a time" + detokenize(reply) + " and then"}};
    // The reply starts without a space, so it glues to "time": only the prompt minus its last word is a
    // prefix. Chat APIs (above) keep the reply in its own message and are exact.
    const auto p2 = render_completions(b2);
    ASSERT_TRUE(p2);
    EXPECT_TRUE(starts_with(p2->at(0), Tokens(p1->at(0).begin(), p1->at(0).end() - 1)));
  }
}

TEST(ChatTemplate, ToolsAndToolCalls) {
  const auto plain = ok(render_chat(json::parse(R"({"messages":[{"role":"user","content":"ls"}]})")));
  const auto with_tools = ok(render_chat(json::parse(R"({"messages":[{"role":"user","content":"ls"}],
      "tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object"}}}]})")));
  // Tools add a system block in front; the user block follows unchanged.
  EXPECT_GT(with_tools.size(), plain.size() + 20);
  EXPECT_EQ(with_tools[0], kImStart);
  EXPECT_EQ(with_tools[1], tokenize("system")[0]);
  EXPECT_TRUE(std::equal(plain.rbegin(), plain.rend(), with_tools.rbegin()));

  const auto calls = ok(render_chat(json::parse(R"({"messages":[{"role":"user","content":"ls"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
        "function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"a.txt"}]})")));
  const Tokens expected_tail =
      cat({render_message("assistant",
                          "<tool_call>\n{\"name\": \"shell\", \"arguments\": "
                          "{\"cmd\":\"ls\"}}\n</tool_call>"),
           render_message("user", "<tool_response>\na.txt\n</tool_response>"), generation_prompt()});
  EXPECT_TRUE(std::equal(expected_tail.rbegin(), expected_tail.rend(), calls.rbegin()));

  // Anthropic tool_use / tool_result render the same way.
  const auto anthropic = ok(render_anthropic(json::parse(R"({"messages":[{"role":"user","content":"ls"},
      {"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"shell","input":{"cmd":"ls"}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"a.txt"}]}]}]})")));
  EXPECT_EQ(anthropic, calls);

  // Responses function_call / function_call_output too.
  const auto responses = ok(render_responses(json::parse(R"({"input":[{"role":"user","content":"ls"},
      {"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"cmd\":\"ls\"}"},
      {"type":"function_call_output","call_id":"c1","output":"a.txt"},
      {"type":"reasoning","summary":[]}]})")));
  EXPECT_EQ(responses, calls);
}

TEST(ChatTemplate, AnthropicSystemShapesAndSystemRoleInMessages) {
  const auto as_string = ok(render_anthropic(json::parse(
      R"({"system":"Rules.","messages":[{"role":"user","content":"hi"}],"thinking":{"type":"enabled"}})")));
  const auto as_blocks = ok(render_anthropic(json::parse(
      R"({"system":[{"type":"text","text":"Rules.","cache_control":{"type":"ephemeral"}}],
          "messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]})")));
  EXPECT_EQ(as_string, as_blocks);
  const auto inline_system = ok(render_anthropic(
      json::parse(R"({"messages":[{"role":"system","content":"Rules."},{"role":"user","content":"hi"}]})")));
  EXPECT_EQ(inline_system, as_string);
  // Thinking blocks and unknown block types add nothing.
  const auto with_thinking = ok(render_anthropic(json::parse(
      R"({"system":"Rules.","messages":[{"role":"user","content":[{"type":"text","text":"hi"},
          {"type":"some_future_block"}]}]})")));
  EXPECT_EQ(with_thinking, as_string);
}

TEST(ChatTemplate, CompletionsPromptShapes) {
  auto strings = render_completions(json::parse(R"({"prompt":["a b","c"]})"));
  ASSERT_TRUE(strings);
  ASSERT_EQ(strings->size(), 2U);
  EXPECT_EQ(strings->at(1), tokenize("c"));
  auto ids = render_completions(json::parse(R"({"prompt":[1,2,151000]})"));
  ASSERT_TRUE(ids);
  EXPECT_EQ(ids->at(0), (Tokens{1, 2, 151000}));
  auto nested = render_completions(json::parse(R"({"prompt":[[5],[6,7]]})"));
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->at(1), (Tokens{6, 7}));
  EXPECT_FALSE(render_prompt(ApiKind::completions, json::parse(R"({"prompt":["a","b"]})")));
  EXPECT_TRUE(render_prompt(ApiKind::completions, json::parse(R"({"prompt":["a"]})")));
  EXPECT_FALSE(render_completions(json::parse(R"({"prompt":[1,"a"]})")));
  EXPECT_FALSE(render_completions(json::parse(R"({"prompt":[999999]})")));
  EXPECT_FALSE(render_completions(json::parse(R"({"prompt":[-1]})")));
  EXPECT_FALSE(render_completions(json::parse(R"({"prompt":""})")));
  EXPECT_FALSE(render_completions(json::parse(R"({"prompt":[]})")));
  EXPECT_FALSE(render_completions(json::parse(R"({"prompt":3})")));
}

TEST(ChatTemplate, InvalidShapesAreErrorsWithAParam) {
  const auto missing = render_chat(json::parse(R"({"model":"m"})"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().param, "messages");
  EXPECT_NE(missing.error().message.find("messages"), std::string::npos);
  EXPECT_FALSE(render_chat(json::parse(R"({"messages":[]})")));
  EXPECT_FALSE(render_chat(json::parse(R"({"messages":[{"role":"user","content":5}]})")));
  EXPECT_FALSE(render_chat(json::parse(R"({"messages":[{"role":"wizard","content":"x"}]})")));
  EXPECT_FALSE(render_chat(json::parse(R"({"messages":[{"content":"x"}]})")));
  EXPECT_FALSE(render_chat(json::parse(R"({"messages":[{"role":"user","content":[{"type":"video"}]}]})")));
  EXPECT_FALSE(render_chat(json::parse(R"({"messages":[{"role":"user","content":"x"}],"tools":{}})")));
  EXPECT_FALSE(render_chat(json::parse(R"([1,2])")));
  EXPECT_FALSE(render_anthropic(json::parse(R"({"messages":[{"role":"user"}]})")));
  EXPECT_FALSE(render_anthropic(json::parse(R"({"system":7,"messages":[{"role":"user","content":"x"}]})")));
  EXPECT_FALSE(render_responses(json::parse(R"({"input":7})")));
  EXPECT_FALSE(render_responses(json::parse(R"({"input":[{"type":"message","content":"x"}]})")));
  const auto bad_json = render_prompt(ApiKind::chat_completions, std::string_view(R"({"messages":[)"));
  ASSERT_FALSE(bad_json);
  EXPECT_NE(bad_json.error().message.find("JSON"), std::string::npos);
}

TEST(ChatTemplate, TruncatedAndMutatedBodiesNeverThrow) {
  const std::string bodies[] = {
      R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"r"}],"tools":[{"type":"function"}]})",
      R"({"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"r"}]},{"type":"image","source":{}}]}],"tools":[{"name":"t"}]})",
      R"({"instructions":"i","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]},{"type":"function_call","name":"f","arguments":"{}"},{"type":"function_call_output","output":"o"}]})",
      R"({"prompt":[[1,2],[3]]})",
  };
  const ApiKind kinds[] = {ApiKind::chat_completions, ApiKind::anthropic_messages, ApiKind::responses,
                           ApiKind::completions};
  std::uint64_t x = 1;
  for (const auto& body : bodies) {
    for (ApiKind kind : kinds) {
      for (std::size_t len = 0; len <= body.size(); ++len) {
        EXPECT_NO_THROW(render_prompt(kind, std::string_view(body).substr(0, len)));
      }
      for (int i = 0; i < 300; ++i) {
        std::string m = body;
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        m[(x >> 33U) % m.size()] = "{}[]\":,0a "[(x >> 20U) % 11];
        EXPECT_NO_THROW(render_prompt(kind, m));
      }
    }
  }
}

}  // namespace
}  // namespace warden::engine

namespace warden::engine {
namespace {

// A 6-turn conversation through the chat template and one engine: from turn 2 on, everything the previous
// turn computed is served from the cache; the same prompt on a fresh engine (another rank) finds nothing.
TEST(ChatTemplate, SixTurnConversationHitsOnItsOwnEngineOnly) {
  Engine home(*find_preset("instant"), 3);
  std::string long_text;
  for (int i = 0; long_text.size() < 1600; ++i) {
    long_text += "The replica keeps the prefix of every conversation it has read. ";
  }
  json::object body{{"model", "m"}};
  body["messages"] = json::array{json::object{{"role", "system"}, {"content", "You are a coding agent."}}};
  double now = 0;
  std::size_t previous_prompt = 0;
  for (int turn = 1; turn <= 6; ++turn) {
    body["messages"].as_array().push_back(
        json::object{{"role", "user"}, {"content", "Turn " + std::to_string(turn) + ". " + long_text}});
    const Tokens prompt = ok(render_chat(body));
    RequestSpec spec;
    spec.id = static_cast<RequestId>(turn);
    spec.prompt = prompt;
    spec.max_tokens = 64;
    spec.arrival_time = now;
    ASSERT_TRUE(home.add_request(spec));
    Tokens reply;
    Usage usage;
    while (home.has_work()) {
      const auto r = home.step(now);
      now += r.duration;
      for (const auto& e : r.events) {
        reply.push_back(e.token);
        if (e.finished) {
          usage = e.usage;
        }
      }
    }
    if (turn == 1) {
      EXPECT_EQ(usage.cached_tokens, 0U);
    } else {
      // Everything the previous turn computed (its prompt and all but the last reply token), in full blocks.
      EXPECT_EQ(usage.cached_tokens, (previous_prompt + 64 - 1) / 16 * 16) << "turn " << turn;
      EXPECT_GT(usage.cached_tokens, usage.prompt_tokens / 2);
      Engine fresh(*find_preset("instant"), 3);
      EXPECT_EQ(fresh.cached_prefix_tokens(prompt), 0U);
    }
    body["messages"].as_array().push_back(
        json::object{{"role", "assistant"}, {"content", detokenize(reply)}});
    previous_prompt = prompt.size();
  }
}

}  // namespace
}  // namespace warden::engine
