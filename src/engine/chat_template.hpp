// Renders an API request body into the prompt token sequence the engine sees, Qwen (ChatML) style:
//
//   <|im_start|>system\n{system text}{tools block}<|im_end|>\n
//   <|im_start|>user\n{text}<|im_end|>\n
//   <|im_start|>assistant\n{text}{tool calls}<|im_end|>\n
//   ...
//   <|im_start|>assistant\n            <- generation prompt, the model's reply follows
//
// Each message is rendered from that message alone (plus the tools block for the system message), so
// turn N+1's prompt starts with exactly turn N's prompt followed by the reply tokens, as long as the
// client sends the reply text back unchanged as the assistant message (what all agent clients do).
//
// Shapes accepted (validated; anything else is an Error fit for a 400):
// - OpenAI chat: `messages` [{role: system|developer|user|assistant|tool, content: string | [parts] | null,
//   tool_calls?, tool_call_id?}], `tools`? Parts: text (rendered), image_url / input_audio / file
//   (a short placeholder); unknown part types are refused.
// - Anthropic messages: `system`? (string or text blocks), `messages` [{role: user|assistant|system,
//   content: string | [blocks]}], `tools`? Blocks: text, tool_use, tool_result (content string or blocks),
//   image / document (placeholder), thinking / redacted_thinking (skipped, as Qwen drops past reasoning);
//   unknown block types are skipped (Anthropic clients add new ones freely). cache_control is ignored.
// - Completions: `prompt` string, array of strings, array of token ids, or array of token-id arrays; no
//   template is applied (raw prompt). render_completions gives one sequence per prompt; render_prompt
//   refuses more than one (the simulator serves n=1, one prompt per request).
// - Responses: `instructions`? (system), `input` string or items: messages ({role, content: string |
//   [input_text | output_text | refusal | input_image ...]}, with or without type "message"),
//   function_call, function_call_output; reasoning items are skipped; `tools`? Consecutive function calls
//   render as one assistant block, like the calls of one chat assistant message.
#pragma once

#include <boost/json/value.hpp>

#include <string_view>
#include <vector>

#include "engine/result.hpp"
#include "engine/tokenizer.hpp"

namespace warden::engine {

enum class ApiKind {
  chat_completions,    // POST /v1/chat/completions
  completions,         // POST /v1/completions
  responses,           // POST /v1/responses
  anthropic_messages,  // POST /v1/messages and /v1/messages/count_tokens
};

Result<Tokens> render_chat(const boost::json::value& body);
Result<Tokens> render_anthropic(const boost::json::value& body);
Result<Tokens> render_responses(const boost::json::value& body);
Result<std::vector<Tokens>> render_completions(const boost::json::value& body);

// The one prompt of a request of any kind; completions with several prompts are refused.
Result<Tokens> render_prompt(ApiKind kind, const boost::json::value& body);

// Same, from the raw body text (malformed JSON is an Error, never an exception).
Result<Tokens> render_prompt(ApiKind kind, std::string_view body_text);

// Tokens of one chat message as the template renders it (header, content, <|im_end|>, "\n"); used by
// tests and by the workload generator to size turns.
Tokens render_message(std::string_view role, std::string_view content);

// A tool call as the template renders it inside an assistant block (Qwen's <tool_call> JSON); several calls
// of one reply are joined by newlines.
std::string tool_call_text(std::string_view name, std::string_view arguments_json);

// The generation prompt appended at the end of every chat-style prompt: <|im_start|>assistant\n.
Tokens generation_prompt();

}  // namespace warden::engine
