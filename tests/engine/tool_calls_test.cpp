#include "engine/tool_calls.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "engine/agent_request.hpp"
#include "engine/chat_template.hpp"
#include "engine/engine.hpp"
#include "run_one.hpp"

namespace warden::engine {
namespace {

namespace json = boost::json;

// Tool schemas as Claude Code 2.1.332 and Codex 0.171.0 send them (trimmed to names, types, required).
json::object tool(std::string_view name, json::object props, json::array required) {
  return json::object{{"name", name},
                      {"description", "d"},
                      {"input_schema", json::object{{"type", "object"},
                                                    {"properties", std::move(props)},
                                                    {"required", std::move(required)}}}};
}

json::array claude_code_tools() {
  const json::object str{{"type", "string"}};
  return json::array{
      tool("Agent", {{"description", str}, {"prompt", str}, {"subagent_type", str}},
           {"description", "prompt"}),
      tool("Bash", {{"command", str}, {"description", str}, {"timeout", json::object{{"type", "number"}}}},
           {"command"}),
      tool("Edit", {{"file_path", str}, {"old_string", str}, {"new_string", str}},
           {"file_path", "old_string", "new_string"}),
      tool("Read", {{"file_path", str}, {"offset", json::object{{"type", "integer"}}}}, {"file_path"}),
      tool("Write", {{"file_path", str}, {"content", str}}, {"file_path", "content"}),
  };
}

json::array codex_tools() {
  const json::object str{{"type", "string"}};
  return json::array{
      json::object{{"type", "function"},
                   {"name", "exec_command"},
                   {"parameters", json::object{{"type", "object"},
                                               {"properties", json::object{{"cmd", str}, {"workdir", str}}},
                                               {"required", json::array{"cmd"}}}}},
      json::object{{"type", "function"},
                   {"name", "write_stdin"},
                   {"parameters", json::object{{"type", "object"},
                                               {"properties", json::object{{"chars", str}}},
                                               {"required", json::array{"session_id"}}}}},
      json::object{{"type", "web_search"}},
  };
}

// Claude Code's first request of a task: system, the user's prompt, the environment as a system message.
json::object claude_body(std::string_view prompt) {
  return json::object{
      {"model", "m"},
      {"max_tokens", 32000},
      {"system", json::array{json::object{{"type", "text"}, {"text", "You are Claude Code."}}}},
      {"tools", claude_code_tools()},
      {"messages",
       json::array{
           json::object{{"role", "user"},
                        {"content", json::array{json::object{{"type", "text"}, {"text", prompt}}}}},
           json::object{{"role", "system"},
                        {"content", "# Environment\n - Primary working directory: /home/u/proj\n"}}}}};
}

// What an agent does with a reply of tool calls: append it and each call's result.
void run_tools(json::object& body, const std::vector<ToolCall>& calls, std::string_view result) {
  json::array uses;
  json::array results;
  for (const auto& c : calls) {
    uses.push_back(json::object{{"type", "tool_use"},
                                {"id", "toolu_" + c.id},
                                {"name", c.name},
                                {"input", json::parse(c.arguments)}});
    results.push_back(
        json::object{{"type", "tool_result"}, {"tool_use_id", "toolu_" + c.id}, {"content", result}});
  }
  auto& messages = body["messages"].as_array();
  messages.push_back(json::object{{"role", "assistant"}, {"content", std::move(uses)}});
  messages.push_back(json::object{{"role", "user"}, {"content", std::move(results)}});
}

std::vector<ToolCall> decide(const ToolCallModel& m, const json::object& body,
                             ApiKind kind = ApiKind::anthropic_messages, std::uint64_t seed = 7) {
  return decide_tool_calls(m, read_agent_request(kind, body), seed);
}

ToolCallModel agent_like() {
  return ToolCallModel{3.5, 0.36, 0.05};
}

// Runs one task's tool loop to its text reply; returns the rounds it took and checks every call.
std::uint32_t run_task(const ToolCallModel& m, json::object body, std::set<std::string>& names) {
  std::uint32_t rounds = 0;
  for (; rounds < 60; ++rounds) {
    const auto calls = decide(m, body);
    if (calls.empty()) {
      break;
    }
    for (const auto& c : calls) {
      names.insert(c.name);
      const json::value args = json::parse(c.arguments);
      EXPECT_TRUE(args.is_object()) << c.arguments;
      if (c.name == "Bash") {
        const std::string cmd(args.at("command").as_string());
        EXPECT_TRUE(cmd == "ls" || cmd == "ls -la" || cmd == "pwd") << cmd;
      } else if (c.name == "Read") {
        EXPECT_TRUE(args.at("file_path").as_string().starts_with("/home/u/proj/")) << c.arguments;
      } else if (c.name == "Agent") {
        EXPECT_EQ(args.at("prompt").as_string(), kDelegatedTask);
        EXPECT_TRUE(args.as_object().contains("description"));
      }
    }
    run_tools(body, calls, "notes.txt\nmain.py\nREADME.md\nsrc\n");
  }
  return rounds;
}

TEST(ToolCalls, NoToolsOfferedOrModelOffGivesText) {
  json::object body = claude_body("list the files");
  EXPECT_TRUE(decide(ToolCallModel{}, body).empty());  // rounds 0: off
  body.erase("tools");
  EXPECT_TRUE(decide(agent_like(), body).empty());
  // Only tools that write: nothing the stand-in may call.
  json::object writes = claude_body("list the files");
  writes["tools"] = json::array{claude_code_tools()[2], claude_code_tools()[4]};
  for (int i = 0; i < 50; ++i) {
    writes["messages"].as_array()[0] =
        json::object{{"role", "user"}, {"content", "task " + std::to_string(i)}};
    EXPECT_TRUE(decide(agent_like(), writes).empty());
  }
}

TEST(ToolCalls, SameRequestSameCallsWhateverTheRank) {
  ToolCallModel m = agent_like();
  m.rounds = 50;  // every task calls tools
  const json::object body = claude_body("what is in here?");
  const auto a = decide(m, body);
  const auto b = decide(m, json::parse(json::serialize(body)).as_object());
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].arguments, b[i].arguments);
    EXPECT_EQ(a[i].id.size(), 24U);
  }
  // The reply's tokens too: what the engine generates on any rank.
  EXPECT_EQ(make_tool_reply(a).tokens, make_tool_reply(b).tokens);
}

TEST(ToolCalls, OnlyReadOnlyToolsWithValidArgumentsAndEveryTaskEndsWithText) {
  std::set<std::string> names;
  double total = 0;
  const int tasks = 400;
  for (int i = 0; i < tasks; ++i) {
    const std::uint32_t rounds =
        run_task(agent_like(), claude_body("task number " + std::to_string(i)), names);
    EXPECT_LT(rounds, 60U);
    total += rounds;
  }
  EXPECT_EQ(names, (std::set<std::string>{"Agent", "Bash", "Read"}));
  // Rounds per task: the drawn geometric of mean 3.5, shortened when a task runs out of things to read.
  EXPECT_GT(total / tasks, 2.0);
  EXPECT_LT(total / tasks, 4.0);
}

TEST(ToolCalls, TextAfterExactlyTheDrawnRounds) {
  ToolCallModel m{3.5, 0.0, 0.0};
  int checked = 0;
  for (int i = 0; i < 100; ++i) {
    const json::object body = claude_body("read everything " + std::to_string(i));
    // The task's text as the request holds it seeds its rounds.
    const std::string task = read_agent_request(ApiKind::anthropic_messages, body).task;
    const std::uint32_t drawn = draw_tool_rounds(m, stable_hash(task, 7));
    if (drawn > 4) {
      continue;  // 3 files to read + one listing: longer draws end when nothing is left
    }
    std::set<std::string> names;
    EXPECT_EQ(run_task(m, body, names), drawn) << task;
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

TEST(ToolCalls, ListsThenReadsWhatTheListingShowedInParallelWhenDrawn) {
  ToolCallModel m{50, 1.0, 0.0};  // always parallel, never a subagent
  json::object body = claude_body("look around");
  const auto first = decide(m, body);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first[0].name, "Bash");
  EXPECT_EQ(json::parse(first[0].arguments).at("command").as_string(), "ls");
  run_tools(body, {first[0]}, "notes.txt\nmain.py\nREADME.md\n");
  const auto reads = decide(m, body);
  ASSERT_GE(reads.size(), 2U);
  std::set<std::string> paths;
  for (const auto& c : reads) {
    EXPECT_EQ(c.name, "Read");
    paths.insert(std::string(json::parse(c.arguments).at("file_path").as_string()));
  }
  EXPECT_EQ(paths.size(), reads.size());  // distinct files
  EXPECT_TRUE(paths.contains("/home/u/proj/notes.txt") || paths.contains("/home/u/proj/main.py"));
  m.parallel = 0;
  EXPECT_EQ(decide(m, body).size(), 1U);
}

TEST(ToolCalls, SubagentWhenTheTaskAsksButNeverInsideTheStandInsOwnSubagent) {
  ToolCallModel m = agent_like();
  m.subagent = 0;
  const auto calls = decide(m, claude_body("explore this folder using a subagent, then read notes.txt"));
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls[0].name, "Agent");
  // The subagent's own first request: its task is the delegated text, and it may not delegate again.
  m.subagent = 1.0;
  m.rounds = 50;
  const auto inside = decide(m, claude_body(std::string(kDelegatedTask)));
  ASSERT_FALSE(inside.empty());
  EXPECT_EQ(inside[0].name, "Bash");
  // With subagent = 1 every other task starts with one.
  EXPECT_EQ(decide(m, claude_body("anything"))[0].name, "Agent");
}

TEST(ToolCalls, CodexGetsItsShellToolWithAReadOnlyCommand) {
  ToolCallModel m{50, 0.0, 1.0};  // a subagent is asked for, but Codex offers no subagent tool here
  json::object body{
      {"model", "m"},
      {"tools", codex_tools()},
      {"input", json::array{json::object{{"type", "message"},
                                         {"role", "user"},
                                         {"content", "<environment_context>\n  <cwd>/w</cwd>\n"}},
                            json::object{{"type", "message"}, {"role", "user"}, {"content", "list"}}}}};
  const auto calls = decide(m, body, ApiKind::responses);
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].name, "exec_command");
  EXPECT_EQ(calls[0].arguments, R"({"cmd":"ls"})");
  // After the listing, it reads a file it saw, still with the shell.
  auto& input = body["input"].as_array();
  input.push_back(json::object{{"type", "function_call"},
                               {"name", "exec_command"},
                               {"arguments", calls[0].arguments},
                               {"call_id", "c1"}});
  input.push_back(json::object{{"type", "function_call_output"},
                               {"call_id", "c1"},
                               {"output", "Process exited with code 0\nOutput:\nnotes.txt\n"}});
  const auto next = decide(m, body, ApiKind::responses);
  ASSERT_EQ(next.size(), 1U);
  EXPECT_EQ(next[0].arguments, R"({"cmd":"head -n 60 notes.txt"})");
  // An older Codex shell whose command is an array of words.
  body["tools"] = json::array{json::object{
      {"type", "function"},
      {"name", "shell"},
      {"parameters", json::object{{"properties", json::object{{"command", json::object{{"type", "array"}}}}},
                                  {"required", json::array{"command"}}}}}};
  input.resize(2);
  EXPECT_EQ(decide(m, body, ApiKind::responses)[0].arguments, R"({"command":["bash","-lc","ls"]})");
}

// What Claude Code 2.1.332 sent when a background subagent finished, and when it compacted.
TEST(ToolCalls, NotificationsContinueTheTaskAndTextOnlyPromptsGetText) {
  ToolCallModel m{50, 0.0, 0.0};
  json::object body = claude_body("read notes.txt");
  run_tools(body, {ToolCall{"a", "Bash", R"({"command":"ls"})"}}, "notes.txt");
  body["messages"].as_array().push_back(
      json::object{{"role", "assistant"}, {"content", "Here is what I found."}});
  body["messages"].as_array().push_back(json::object{
      {"role", "user"},
      {"content",
       "<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n<task-notification>a subagent "
       "finished<usage><subagent_tokens>8102</subagent_tokens></usage></task-notification>\n"
       "</system-reminder>"}});
  const AgentRequest r = read_agent_request(ApiKind::anthropic_messages, body);
  EXPECT_EQ(r.task, "read notes.txt\n");  // the notification is not a new task ...
  EXPECT_EQ(r.rounds, 1U);
  const auto calls = decide(m, body);  // ... and starts no subagent although it says "subagent"
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls[0].name, "Read");

  // Words sent along with tool results count too (a compaction forked off a tool round).
  json::object forked = body;
  run_tools(forked, {ToolCall{"b", "Bash", R"({"command":"pwd"})"}}, "/w");
  forked["messages"].as_array().back().as_object()["content"].as_array().push_back(
      json::object{{"type", "text"}, {"text", "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools."}});
  EXPECT_TRUE(decide(m, forked).empty());

  json::object compact = claude_body(
      "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed "
      "summary.");
  EXPECT_TRUE(decide(m, compact).empty());
  json::object none = claude_body("look around");
  ASSERT_FALSE(decide(m, none).empty());
  none["tool_choice"] = json::object{{"type", "none"}};
  EXPECT_TRUE(decide(m, none).empty());
}

// Claude Code's interactive subagents deliver their report with a SubagentHandback call, and it asks
// again ("[handback-send-enforce] ... Call SubagentHandback") when a run ends in plain text.
TEST(ToolCalls, SubagentsHandTheirReportBackThroughTheToolTheClientOffers) {
  ToolCallModel m{3.5, 0.0, 0.0};
  json::object body = claude_body(std::string(kDelegatedTask));
  body["tools"].as_array().push_back(
      tool("SubagentHandback", {{"message", json::object{{"type", "string"}}}}, {"message"}));
  std::vector<ToolCall> calls;
  for (int round = 0; round < 10; ++round) {
    calls = decide(m, body);
    ASSERT_FALSE(calls.empty());
    if (calls[0].name == "SubagentHandback") {
      break;
    }
    run_tools(body, calls, "notes.txt\nmain.py");
  }
  ASSERT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls[0].name, "SubagentHandback");
  const std::string report(json::parse(calls[0].arguments).at("message").as_string());
  EXPECT_NE(report.find("notes.txt"), std::string::npos) << report;

  // Even when its task draws no rounds, a subagent works one round before it reports.
  json::object fresh = claude_body(std::string(kDelegatedTask));
  fresh["tools"] = body["tools"];
  EXPECT_EQ(decide(ToolCallModel{0.01, 0.0, 0.0}, fresh)[0].name, "Bash");

  // A tool name is not a request for a subagent; the word is, in the conversation's opening prompt.
  m.rounds = 50;
  const auto enforce =
      decide(m, claude_body("[handback-send-enforce] Your report has not been delivered. Call "
                            "SubagentHandback({message: <your full report>}) now"));
  ASSERT_FALSE(enforce.empty());
  EXPECT_NE(enforce[0].name, "Agent");
  EXPECT_EQ(decide(m, claude_body("Use two sub-agents for this."))[0].name, "Agent");
  json::object later = claude_body("hello");
  later["messages"].as_array().push_back(json::object{{"role", "assistant"}, {"content", "Hi."}});
  later["messages"].as_array().push_back(
      json::object{{"role", "user"},
                   {"content", "Another Claude session sent a message: please verify this subagent's work"}});
  EXPECT_NE(decide(m, later)[0].name, "Agent");
}

TEST(AgentRequest, RoundsCountFromTheLastUserTextInEachApi) {
  json::object body = claude_body("first task");
  run_tools(body, {ToolCall{"a", "Bash", R"({"command":"ls"})"}}, "x.txt");
  run_tools(body,
            {ToolCall{"b", "Read", R"({"file_path":"/home/u/proj/x.txt"})"},
             ToolCall{"c", "Read", R"({"file_path":"/home/u/proj/y.txt"})"}},
            "hello");
  AgentRequest r = read_agent_request(ApiKind::anthropic_messages, body);
  EXPECT_EQ(r.rounds, 2U);
  EXPECT_EQ(r.cwd, "/home/u/proj");
  EXPECT_EQ(r.files, std::vector<std::string>{"x.txt"});
  EXPECT_NE(r.task.find("first task"), std::string::npos);
  body["messages"].as_array().push_back(json::object{{"role", "assistant"}, {"content", "done"}});
  body["messages"].as_array().push_back(json::object{{"role", "user"}, {"content", "second task"}});
  r = read_agent_request(ApiKind::anthropic_messages, body);
  EXPECT_EQ(r.rounds, 0U);
  EXPECT_EQ(r.task, "second task");

  const json::value chat = json::parse(R"({"tools":[{"type":"function","function":{"name":"Bash",
      "parameters":{"properties":{"command":{"type":"string"}},"required":["command"]}}}],
      "messages":[{"role":"system","content":"s"},{"role":"user","content":"go"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]},
      {"role":"tool","tool_call_id":"1","content":"a.md\nb.md"}]})");
  r = read_agent_request(ApiKind::chat_completions, chat);
  EXPECT_EQ(r.rounds, 1U);
  EXPECT_EQ(r.tools.size(), 1U);
  EXPECT_EQ(r.files, (std::vector<std::string>{"a.md", "b.md"}));

  const json::value responses = json::parse(R"({"input":[{"role":"user","content":"go"},
      {"type":"function_call","name":"exec_command","arguments":"{}","call_id":"1"},
      {"type":"function_call","name":"exec_command","arguments":"{}","call_id":"2"},
      {"type":"function_call_output","call_id":"1","output":"x"},
      {"type":"function_call_output","call_id":"2","output":"y"},
      {"type":"function_call","name":"exec_command","arguments":"{}","call_id":"3"},
      {"type":"function_call_output","call_id":"3","output":"z"}]})");
  EXPECT_EQ(read_agent_request(ApiKind::responses, responses).rounds, 2U);  // parallel calls: one round

  // Results of parallel calls in one message stay apart: "a.md" then "b.md", not "a.mdb.md".
  json::object parallel = claude_body("go");
  run_tools(parallel,
            {ToolCall{"a", "Bash", R"({"command":"ls"})"}, ToolCall{"b", "Bash", R"({"command":"pwd"})"}},
            "a.md");
  parallel["messages"].as_array().back().as_object()["content"].as_array()[1].as_object()["content"] = "b.md";
  EXPECT_EQ(read_agent_request(ApiKind::anthropic_messages, parallel).files,
            (std::vector<std::string>{"a.md", "b.md"}));
}

// The reply's tokens are the assistant turn the next request renders, in every API: the prefix cache
// holds the tool call exactly as it does a text reply.
TEST(ToolCalls, ReplyTokensAreWhatTheNextTurnRendersInEachApi) {
  const std::vector<ToolCall> calls{{"0123456789abcdef01234567", "Read", R"({"file_path":"/w/a.txt"})"},
                                    {"0123456789abcdef01234568", "Read", R"({"file_path":"/w/b.txt"})"}};
  const Tokens reply = make_tool_reply(calls).tokens;
  auto check = [&](ApiKind kind, json::object before, json::object after) {
    const Tokens prompt = *render_prompt(kind, before);
    const Tokens next = *render_prompt(kind, after);
    Tokens expected = prompt;
    expected.insert(expected.end(), reply.begin(), reply.end());
    ASSERT_GE(next.size(), expected.size());
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), next.begin())) << static_cast<int>(kind);
  };
  json::object anthropic = claude_body("read");
  json::object anthropic_after = anthropic;
  run_tools(anthropic_after, calls, "text");
  check(ApiKind::anthropic_messages, anthropic, anthropic_after);

  json::object chat{{"messages", json::array{json::object{{"role", "user"}, {"content", "read"}}}}};
  json::object chat_after = chat;
  json::array tool_calls;
  for (const auto& c : calls) {
    tool_calls.push_back(
        json::object{{"id", c.id},
                     {"type", "function"},
                     {"function", json::object{{"name", c.name}, {"arguments", c.arguments}}}});
  }
  chat_after["messages"].as_array().push_back(
      json::object{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", std::move(tool_calls)}});
  check(ApiKind::chat_completions, chat, chat_after);

  json::object responses{{"input", json::array{json::object{{"role", "user"}, {"content", "read"}}}}};
  json::object responses_after = responses;
  for (const auto& c : calls) {
    responses_after["input"].as_array().push_back(json::object{
        {"type", "function_call"}, {"name", c.name}, {"arguments", c.arguments}, {"call_id", c.id}});
  }
  check(ApiKind::responses, responses, responses_after);
}

TEST(ToolCalls, EngineGeneratesTheFixedReplyAndStopsAfterIt) {
  const ToolReply tools = make_tool_reply({{"0123456789abcdef01234567", "Bash", R"({"command":"ls"})"}});
  ASSERT_EQ(tools.ends.back(), tools.tokens.size());
  for (const int max_tokens : {1000, 3}) {
    EngineConfig c;
    c.reply = ReplyLength{250, 1.0};  // ignored for a fixed reply
    RequestSpec spec;
    spec.id = 1;
    spec.prompt = tokenize("hello there");
    spec.max_tokens = max_tokens;
    spec.reply = tools.tokens;
    const auto [out, usage] = test::run_one(c, 1, std::move(spec));
    const std::size_t n = std::min<std::size_t>(tools.tokens.size(), static_cast<std::size_t>(max_tokens));
    EXPECT_EQ(out, Tokens(tools.tokens.begin(), tools.tokens.begin() + static_cast<std::ptrdiff_t>(n)));
    EXPECT_EQ(usage.completion_tokens, n);
    EXPECT_EQ(usage.finish_reason, max_tokens == 3 ? FinishReason::length : FinishReason::stop);
  }
}

}  // namespace
}  // namespace warden::engine
