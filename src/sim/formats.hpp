#pragma once
// vLLM's response formats for the four generation APIs, streaming (SSE) and not. Pure string building.
//
// Streams, as vLLM sends them:
//   chat:        role chunk (delta {role, content ""}), one chunk per token (delta {content}), the last with
//                finish_reason; a usage chunk (choices []) only with stream_options.include_usage; [DONE].
//   completions: one text_completion chunk per token (last with finish_reason), optional usage chunk, [DONE].
//   messages:    message_start (usage.input_tokens = prompt - cached, cache_read_input_tokens),
//   content_block_start,
//                content_block_delta (text_delta) per token, content_block_stop, message_delta (stop_reason,
//                usage), message_stop, then data: [DONE].
//   responses:   response.created, response.in_progress, response.output_item.added,
//                response.content_part.added, response.output_text.delta per token,
//                response.output_text.done, response.content_part.done, response.output_item.done,
//                response.completed (with usage), or response.incomplete (status "incomplete",
//                incomplete_details.reason "max_output_tokens") when the reply was capped.
//   Finish reasons: chat/completions "stop" or "length"; messages stop_reason "end_turn" or "max_tokens".
//
// A reply of tool calls (engine::ToolReply, not for completions) streams each call as its tokens come, the
// arguments' JSON cut in proportion to the call's tokens:
//   chat:      delta.tool_calls [{index, id "call_…", type "function", function {name, arguments ""}}], then
//              delta.tool_calls [{index, function {arguments: part}}]; a last chunk with finish_reason
//              "tool_calls".
//   messages:  per call content_block_start (tool_use {id "toolu_…", name, input {}}), content_block_delta
//              (input_json_delta {partial_json}), content_block_stop; stop_reason "tool_use".
//   responses: per call response.output_item.added (function_call {id "fc_…", call_id "call_…", name,
//              arguments ""}), response.function_call_arguments.delta, .done, response.output_item.done.
// A capped tool reply ends with its arguments cut where the cap fell, with the capped finish reason.

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/tool_calls.hpp"

namespace warden::sim {

enum class Api { chat, completions, responses, messages };

struct ReplyMeta {
  std::string id;              // "chatcmpl-…", "cmpl-…", "resp_…", "msg_…"
  std::string model;           // served model name
  std::int64_t created = 0;    // unix seconds
  bool include_usage = false;  // OpenAI streams: stream_options.include_usage
};

struct UsageOut {
  std::uint32_t prompt_tokens = 0;
  std::uint32_t cached_tokens = 0;
  std::uint32_t completion_tokens = 0;
  bool length = true;  // capped by max_tokens / model length; false: the reply ended by itself (EOS)
};

/// The full (non-streaming) response body: `text`, or the calls of `tools` when it holds any.
std::string full_body(Api api, const ReplyMeta& meta, std::string_view text, const UsageOut& usage,
                      const engine::ToolReply& tools = {});

/// Builds a stream's SSE events step by step.
class StreamEncoder {
 public:
  StreamEncoder(Api api, ReplyMeta meta, engine::ToolReply tools = {})
      : api_(api), meta_(std::move(meta)), tools_(std::move(tools)) {}
  /// Events sent once, right before the first token's (usage: prompt/cached as known at that point).
  std::string start(const UsageOut& usage);
  /// Events for one generated token; `last` marks the final token (finish reason goes with it).
  std::string token(std::string_view text, bool last, const UsageOut& usage);
  /// Closing events after the last token (usage chunk, message_stop, response.completed, [DONE]).
  std::string finish(const UsageOut& usage);

 private:
  std::string event(std::string_view type, std::string json);
  // Tool replies: the events of one more token, and those closing the call in progress.
  std::string tool_token(bool last, const UsageOut& usage);
  std::string open_call(std::size_t index);
  std::string call_delta(std::size_t index, std::string_view part);
  std::string close_call();
  std::string responses_end(const UsageOut& usage);
  Api api_;
  ReplyMeta meta_;
  engine::ToolReply tools_;
  std::string text_;  // accumulated (responses' done events repeat the whole text)
  std::uint64_t sequence_ = 0;
  std::uint32_t tokens_ = 0;                         // tool replies: tokens seen
  std::size_t open_ = static_cast<std::size_t>(-1);  // the call being streamed
  std::size_t sent_ = 0;                             // ... and the characters of its arguments sent
};

/// "chatcmpl-" / "cmpl-" / "resp_" / "msg_" followed by 32 hex digits of `random`.
std::string make_id(Api api, std::uint64_t hi, std::uint64_t lo);

}  // namespace warden::sim
