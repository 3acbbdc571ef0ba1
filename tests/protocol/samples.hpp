#pragma once
// Realistic request bodies for the protocol tests and benchmark, shaped like what the real clients send
// (interfaces.md, "Clients"). Built with Boost.JSON so the JSON is always valid.

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace warden::protocol::samples {

namespace json = boost::json;

/// Deterministic filler text (words from a small vocabulary), `bytes` long, seeded.
inline std::string filler(std::size_t bytes, std::uint64_t seed) {
  static const char* words[] = {"the",     "file",  "function", "returns", "error", "cache",
                                "replica", "token", "stream",   "test",    "value", "path",
                                "build",   "agent", "session",  "model"};
  std::string out;
  out.reserve(bytes + 16);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  while (out.size() < bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out += words[x % 16];
    out += (x >> 20) % 11 == 0 ? ".\n" : " ";
  }
  out.resize(bytes);
  return out;
}

inline json::array claude_tools(std::size_t description_bytes) {
  json::array tools;
  for (const char* name : {"Bash", "Read", "Edit", "Write", "Grep", "Glob", "Task", "WebFetch"}) {
    json::object schema{{"type", "object"},
                        {"properties",
                         {{"command", {{"type", "string"}, {"description", "The command to run"}}},
                          {"timeout", {{"type", "number"}, {"description", "Optional timeout in ms"}}}}},
                        {"required", json::array{"command"}},
                        {"additionalProperties", false},
                        {"$schema", "http://json-schema.org/draft-07/schema#"}};
    tools.push_back(json::object{{"name", name},
                                 {"description", filler(description_bytes, std::hash<std::string>{}(name))},
                                 {"input_schema", std::move(schema)}});
  }
  return tools;
}

enum class ClaudeMetadata { none, json_string, legacy };

struct ClaudeOptions {
  std::string session = "0f6b8f9e-3c1e-4a7a-9d7e-2b1c5e8f4a10";
  ClaudeMetadata metadata = ClaudeMetadata::json_string;
  int turns = 1;                         // user messages in the history
  std::size_t system_bytes = 12'000;     // the long system block
  std::size_t tool_bytes = 1'500;        // description size per tool (8 tools)
  std::size_t first_user_bytes = 4'000;  // first user message size
  std::size_t turn_bytes = 1'600;        // each later user/assistant message
  std::uint64_t seed = 1;                // varies the first user message
  std::string billing;                   // Claude Code's billing line as a first system block ("": none)
};

/// A Claude Code POST /v1/messages body: system blocks with cache_control, tools, thinking,
/// context_management, metadata.user_id, stream. The cache_control marker sits on the last user message,
/// as Claude Code does, so it moves between turns.
inline std::string claude_code_body(const ClaudeOptions& o) {
  json::array system{
      json::object{{"type", "text"},
                   {"text", "You are Claude Code, Anthropic's official CLI for Claude."},
                   {"cache_control", {{"type", "ephemeral"}}}},
      json::object{
          {"type", "text"}, {"text", filler(o.system_bytes, 7)}, {"cache_control", {{"type", "ephemeral"}}}}};
  if (!o.billing.empty()) {
    system.insert(system.begin(), json::object{{"type", "text"}, {"text", o.billing}});
  }
  json::array messages;
  for (int t = 0; t < o.turns; ++t) {
    json::array content;
    if (t == 0) {
      content.push_back(json::object{{"type", "text"},
                                     {"text", "<system-reminder>\nAs you answer, use this context: " +
                                                  filler(600, 3) + "\n</system-reminder>"}});
      content.push_back(json::object{{"type", "text"}, {"text", filler(o.first_user_bytes, 1000 + o.seed)}});
    } else {
      content.push_back(
          json::object{{"type", "text"}, {"text", filler(o.turn_bytes, 5000 + o.seed * 100 + t)}});
    }
    if (t == o.turns - 1) {
      content.back().as_object()["cache_control"] = json::object{{"type", "ephemeral"}};
    }
    messages.push_back(json::object{{"role", "user"}, {"content", std::move(content)}});
    if (t < o.turns - 1) {
      messages.push_back(json::object{
          {"role", "assistant"},
          {"content",
           json::array{
               json::object{{"type", "thinking"}, {"thinking", filler(200, 77 + t)}, {"signature", "sig"}},
               json::object{{"type", "text"}, {"text", filler(o.turn_bytes, 9000 + o.seed * 100 + t)}}}}});
    }
  }
  json::object body{
      {"model", "claude-sonnet-4-5-20250929"},
      {"messages", std::move(messages)},
      {"system", std::move(system)},
      {"tools", claude_tools(o.tool_bytes)},
      {"max_tokens", 32000},
      {"thinking", {{"type", "enabled"}, {"budget_tokens", 31999}}},
      {"context_management",
       {{"edits", json::array{json::object{{"type", "clear_thinking_20251015"}, {"keep", "all"}}}}}},
      {"output_config", {{"effort", "high"}}},
      {"stream", true}};
  if (o.metadata == ClaudeMetadata::json_string) {
    const std::string uid = json::serialize(
        json::object{{"device_id", "5f1c0e7d9a2b4c6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e"},
                     {"account_uuid", ""},
                     {"session_id", o.session}});
    body["metadata"] = json::object{{"user_id", uid}};
  } else if (o.metadata == ClaudeMetadata::legacy) {
    body["metadata"] = json::object{
        {"user_id",
         "user_5f1c0e7d9a2b4c6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e_account__session_" +
             o.session}};
  }
  return json::serialize(body);
}

/// A Codex CLI POST /v1/responses body.
inline std::string codex_body(const std::string& session, int turns = 1) {
  json::array input{
      json::object{
          {"type", "message"},
          {"role", "developer"},
          {"content", json::array{json::object{{"type", "input_text"},
                                               {"text", "<permissions instructions>" + filler(800, 11) +
                                                            "</permissions instructions>"}}}}},
      json::object{
          {"type", "message"},
          {"role", "user"},
          {"content",
           json::array{json::object{
               {"type", "input_text"},
               {"text", "<environment_context>\n  <cwd>/home/u/p</cwd>\n</environment_context>"}}}}}};
  for (int t = 0; t < turns; ++t) {
    input.push_back(json::object{
        {"type", "message"},
        {"role", "user"},
        {"content", json::array{json::object{{"type", "input_text"}, {"text", filler(300, 40 + t)}}}}});
    if (t < turns - 1) {
      input.push_back(json::object{{"type", "function_call"},
                                   {"name", "shell"},
                                   {"arguments", R"({"command":["ls"]})"},
                                   {"call_id", "call_" + std::to_string(t)}});
      input.push_back(json::object{{"type", "function_call_output"},
                                   {"call_id", "call_" + std::to_string(t)},
                                   {"output", filler(500, 60 + t)}});
    }
  }
  json::object params{{"type", "object"}};
  params["properties"] = json::object{{"command", {{"type", "array"}, {"items", {{"type", "string"}}}}}};
  json::array tools{json::object{{"type", "function"},
                                 {"name", "shell"},
                                 {"description", "Runs a shell command"},
                                 {"strict", false},
                                 {"parameters", std::move(params)}}};
  json::object body{{"model", "gpt-5-codex"},
                    {"instructions", filler(3000, 21)},
                    {"input", std::move(input)},
                    {"tools", std::move(tools)},
                    {"tool_choice", "auto"},
                    {"parallel_tool_calls", false},
                    {"reasoning", {{"effort", "medium"}, {"summary", "auto"}}},
                    {"store", false},
                    {"stream", true},
                    {"include", json::array{"reasoning.encrypted_content"}},
                    {"prompt_cache_key", session}};
  return json::serialize(body);
}

/// An OpenAI chat conversation at turn `turn` (1-based): system + first user message, then each later
/// turn appends the assistant reply and a new user message. Nothing identifies the session.
inline std::string openai_chat_body(int turn, std::uint64_t conversation_seed,
                                    const std::string& system_prompt = "You are a helpful assistant.") {
  json::array messages{json::object{{"role", "system"}, {"content", system_prompt}},
                       json::object{{"role", "user"}, {"content", filler(2000, conversation_seed)}}};
  for (int t = 2; t <= turn; ++t) {
    messages.push_back(
        json::object{{"role", "assistant"}, {"content", filler(500, conversation_seed * 31 + t)}});
    messages.push_back(json::object{{"role", "user"}, {"content", filler(400, conversation_seed * 37 + t)}});
  }
  json::object body{
      {"model", "qwen3-4b-dp4"}, {"messages", std::move(messages)}, {"stream", true}, {"max_tokens", 256}};
  return json::serialize(body);
}

}  // namespace warden::protocol::samples
