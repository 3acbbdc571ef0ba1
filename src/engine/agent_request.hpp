// What an agent's request tells its model about the task at hand: the tools it offers, how many tool
// rounds the current task has had, the task's text, the working directory and the files seen so far.
// Read from the body of any chat-style API (Anthropic messages, OpenAI chat, Responses); the input of the
// tool-call decision (engine/tool_calls.hpp). Pure and lenient: a body the chat template accepts never
// fails here, and whatever cannot be read is simply left empty.
//
// A task starts at the last user message that holds text of its own: not only tool results, and not only
// <system-reminder> blocks (a client's notes, e.g. Claude Code's background-task notifications). Its tool
// rounds are the assistant replies with tool calls after it; parallel calls of one reply are one round
// (consecutive Responses function_call items too). A request whose tool_choice is "none" offers no tools.
#pragma once

#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/chat_template.hpp"

namespace warden::engine {

struct OfferedTool {
  std::string name;
  std::vector<std::string> properties;  // argument names its schema declares
  std::vector<std::string> required;
  bool command_is_array = false;  // its `command` argument is an array of words (Codex's older `shell`)
  bool has(std::string_view property) const;
  bool requires_(std::string_view property) const;
};

struct AgentRequest {
  std::vector<OfferedTool> tools;
  std::uint32_t rounds = 0;        // tool rounds since the task started
  std::string task;                // the text of the user message that started the task
  bool first_task = false;         // ... the conversation's first user text
  std::size_t position = 0;        // messages (items) in the request: tells replies of one task apart
  std::string cwd;                 // working directory the prompt names, if any
  std::vector<std::string> files;  // file names seen in this task's tool results, first seen first
  std::string earlier_calls;       // this task's earlier tool calls (names and arguments), concatenated
  std::string last_text;           // the last message's own words when it is the user's (not tool results)
  const OfferedTool* find(std::string_view name) const;
};

AgentRequest read_agent_request(ApiKind kind, const boost::json::value& body);

}  // namespace warden::engine
