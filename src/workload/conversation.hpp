// One agent conversation as data: its messages, with the tool calls an assistant turn makes and the
// results the agent sends back. What the workload writes (workload.hpp), the tools draw (tools.hpp) and
// the loops hand out (loop.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace warden::workload {

enum class Role { user, assistant };

// A tool call of an assistant message (an Anthropic tool_use block) and the result the agent sent back.
struct ToolCall {
  std::string id;  // "toolu_" + 24 hex digits
  std::string name;
  std::string input_json;  // a JSON object
};
struct ToolResult {
  std::string id;  // the call's id
  std::string content;
};

// One message: a text block (always, when it has neither calls nor results), assistant tool calls after
// the text, user tool results before it.
struct Message {
  Role role;
  std::string text;
  std::vector<ToolCall> calls;
  std::vector<ToolResult> results;
};

// Which prompt start a conversation has: the main thread's system prompt and tools, or a subagent type's.
enum class Prefix : std::uint8_t { main, subagent };

// One agent conversation (a thread): the system prompt is shared and lives in the Workload.
struct Conversation {
  std::uint64_t session_index = 0;  // 0, 1, 2, ... in the order sessions were started
  std::string session_id;           // uuid-like, fixed by (seed, session_index)
  std::size_t turn = 0;             // index of the last user turn in `messages` (0 = first message)
  std::vector<Message> messages;    // user, assistant, user, ... ; ends with a user message when ready
  // Agentic workload only: the subagent's X-Claude-Code-Agent-Id (empty = the main thread), its type,
  // and how often the thread was compacted (its history replaced by a summary).
  std::string agent_id;
  Prefix prefix = Prefix::main;
  std::size_t subagent_type = 0;
  std::size_t compactions = 0;
  // A person at the keyboard runs it (AgenticConfig::interactive; a subagent is its parent's): its billing
  // line says Claude Code's interactive entrypoint, `cli`.
  bool interactive = false;
};

}  // namespace warden::workload
