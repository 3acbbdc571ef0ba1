// The tool definitions and tool calls of the agentic workload: the tools Claude Code offers its main thread
// and its subagents (names as the real client sends them), with descriptions sized to what the real
// definitions weigh, and read-only calls with valid arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/splitmix.hpp"
#include "workload/conversation.hpp"

namespace warden::workload {

// The main thread's 14 tools and a subagent's 10, in the order the client sends them.
std::span<const std::string_view> main_tool_names();
std::span<const std::string_view> subagent_tool_names();

// Text of `tokens` tokens from a stream seed (Workload::text).
using TextSource = std::function<std::string(std::uint64_t stream, std::size_t tokens)>;

// A JSON array of Anthropic tool definitions ({name, description, input_schema}) for the first `count`
// of `names` (cycled if more), `tokens` of description text in all; text from streams derived from `stream`.
std::string tool_definitions(std::span<const std::string_view> names, std::size_t count, std::size_t tokens,
                             std::uint64_t stream, const TextSource& text);

// A tool call of a read-only tool (Read, Grep, Glob, Bash listing, LS) drawn from `rng`, or, with
// `agent` set, a call of the Agent tool starting a subagent of type `subagent_type`.
ToolCall draw_tool_call(base::SplitMix64& rng, bool agent = false, std::size_t subagent_type = 0);

// The name of a subagent type, as the Agent tool's subagent_type argument names it.
std::string_view subagent_type_name(std::size_t type);

}  // namespace warden::workload
