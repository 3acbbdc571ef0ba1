// The stand-in model's tool calls: when a request offers tools, the engine may answer with calls instead
// of text, as an agent's model does (config: ToolCallModel, docs/sim.md).
//
// The decision is a pure function of the request (engine/agent_request.hpp) and the engine seed, so the
// same prompt gets the same answer on every rank, in `sim` and in `simulate`:
// - a task (user prompt) draws its number of tool rounds N (geometric, mean `rounds`) from its text; once
//   it has had N rounds, or nothing is left to do with the tools offered, the reply is text;
// - the first round may start a subagent (Claude Code's `Agent` / `Task`): with probability `subagent`,
//   and always when the task asks for one ("subagent" in its text); never inside a subagent the stand-in
//   started itself (its task is the stand-in's own delegated task);
// - a request whose last user words ask for "text only" (Claude Code's compaction prompt) or whose
//   tool_choice is "none" gets text;
// - where the client wants a subagent's report through a tool (Claude Code's SubagentHandback), the text
//   reply is that call instead, naming the files it saw;
// - otherwise it lists the working directory, then reads the files that listing showed, then searches;
// - a round holds more than one call with probability `parallel` (more reads, or two subagents at once).
// Only tools that read: Read, Glob, Grep, LS, a shell tool (Claude Code's Bash, Codex's exec_command /
// shell / shell_command) with a read-only command (ls, pwd, head), the subagent tool and its hand-back. Never
// a write, an edit, a deletion or a network command; unknown tools are never called.
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/agent_request.hpp"
#include "engine/chat_template.hpp"
#include "engine/config.hpp"
#include "engine/tokenizer.hpp"

namespace warden::engine {

struct ToolCall {
  std::string id;  // 24 hex digits fixed by the request; each API adds its own prefix
  std::string name;
  std::string arguments;  // a JSON object, serialized as the chat template renders it back
};

// A reply of tool calls as the engine generates it: the calls as the chat template renders an assistant
// message holding them, so the next turn's prompt starts with exactly these tokens.
struct ToolReply {
  std::vector<ToolCall> calls;      // empty: the reply is text
  Tokens tokens;                    // the reply's tokens
  std::vector<std::uint32_t> ends;  // tokens up to the end of each call (the last = tokens.size())
};

// The text every subagent the stand-in starts is given: its own tool loop never starts another.
inline constexpr std::string_view kDelegatedTask =
    "Look through the files in the working directory and report briefly what each one holds. Only read "
    "them; change nothing.";

// The number of tool rounds a task of this seed gets before its text reply (0 when the model is off).
std::uint32_t draw_tool_rounds(const ToolCallModel& model, std::uint64_t task_seed);

// The calls `request` gets, or none (a text reply).
std::vector<ToolCall> decide_tool_calls(const ToolCallModel& model, const AgentRequest& request,
                                        std::uint64_t seed);

// The calls' tokens and their boundaries.
ToolReply make_tool_reply(std::vector<ToolCall> calls);

// What the sim server asks: read the body, decide, tokenize. Empty calls: a text reply.
ToolReply tool_reply_for(const ToolCallModel& model, ApiKind kind, const boost::json::value& body,
                         std::uint64_t seed);

}  // namespace warden::engine
