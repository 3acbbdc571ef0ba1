#pragma once
// Token usage and first-content detection in engine responses (non-streaming bodies and SSE events).
//
// Normalised: prompt_tokens is ALWAYS the whole prompt, cached_tokens the part served from the prefix
// cache (nullopt = the engine did not measure it: treat as computed), completion_tokens the output.
//   OpenAI chat/completions: usage.prompt_tokens, usage.completion_tokens,
//     usage.prompt_tokens_details.cached_tokens (missing or null -> nullopt).
//   Responses API: usage.input_tokens, usage.output_tokens, usage.input_tokens_details.cached_tokens;
//     in the body, or in the stream's "response.completed" event under "response".
//   Anthropic: usage.input_tokens counts only the uncached part when cache details are given, so
//     prompt_tokens = input_tokens + cache_read_input_tokens + cache_creation_input_tokens (absent = 0),
//     cached_tokens = cache_read_input_tokens (absent -> nullopt). Streams: message_start carries
//     message.usage (input side), message_delta carries usage.output_tokens (and possibly updated input
//     figures, which then win).

#include "protocol/api.hpp"
#include "protocol/error.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace warden::protocol {

/// How an engine's reply ended: with its final text, or with tool calls for the client to run and answer.
///   Anthropic: stop_reason "tool_use" (in a stream, message_delta's delta.stop_reason), any other: text.
///   OpenAI chat / completions: a choice's finish_reason "tool_calls" (or the older "function_call"), any
///     other: text.
///   Responses API: an output item of a "*_call" type (function_call, ...) in the response (in a stream,
///     response.completed / response.incomplete's response.output), none: text.
enum class ReplyEnd : std::uint8_t { text, tool_calls };

struct Usage {
  std::int64_t prompt_tokens = 0;
  std::optional<std::int64_t> cached_tokens;
  std::int64_t completion_tokens = 0;
  std::optional<ReplyEnd> end;  // nullopt: the reply did not say how it ended
  friend bool operator==(const Usage&, const Usage&) = default;
};

/// Usage of a non-streaming response body. Errc::not_json_object for a body that is not a JSON object,
/// Errc::no_usage if it has no usage object (e.g. an error body).
Result<Usage> parse_usage_body(ApiKind api, std::string_view body);

/// What one SSE event of an engine stream carries. Input: the event's `event:` name (may be empty) and
/// its data. Never fails: unparseable data yields a default StreamEventInfo with `json_ok` false.
struct StreamEventInfo {
  bool json_ok = false;     // data parsed as a JSON object
  bool done = false;        // data is "[DONE]"
  bool content = false;     // carries generated content (first one = TTFB point)
  bool usage_only = false;  // OpenAI: the usage chunk ("choices": [] and a usage object) — drop it when
                            // the client did not ask for include_usage
  bool error = false;       // an error event (Anthropic "error" / OpenAI {"error":...} / response.failed)
  bool skipped = false;     // StreamUsageTracker in fast mode did not parse this event (see there)
  // Usage fields found in this event (already normalised as described above; Anthropic message_start
  // input split is folded into prompt_tokens here).
  std::optional<std::int64_t> prompt_tokens;
  std::optional<std::int64_t> cached_tokens;
  std::optional<std::int64_t> completion_tokens;
  std::optional<ReplyEnd> end;  // this event says how the reply ended
};

/// Content rules: OpenAI chat choices[*].delta.content (or reasoning_content / tool_calls) non-empty;
/// OpenAI completions choices[*].text non-empty; Anthropic "content_block_delta"; Responses
/// "response.output_text.delta" (and other *.delta output events). The event type is taken from the
/// data's "type" member when present, else from the SSE event name.
StreamEventInfo inspect_stream_event(ApiKind api, std::string_view event_name, std::string_view data);

/// Whether an OpenAI stream chunk is the usage chunk (StreamEventInfo::usage_only: a top-level
/// "choices": [] and a "usage" object), from a look at the top level only: member boundaries, nothing
/// decoded, nothing allocated. nullopt when that look cannot tell (not an object, a key with escapes,
/// "choices" or "usage" twice, unbalanced brackets): ask inspect_stream_event then. Lets a relay drop the
/// usage chunk before it parses it (which it then does after relaying the events it keeps).
std::optional<bool> openai_usage_only(std::string_view data);

/// Where the usage-only chunks are in a run of whole SSE events as engines write them ("data: <json>"
/// events ended by a blank line, LF line ends): the byte ranges of those events, blank line included
/// (often none). nullopt when the bytes are not in that form where it matters (a CR anywhere, an unended
/// event, an event mentioning usage with other lines or fields, or one openai_usage_only cannot tell):
/// parse them with SseParser then. Lets a relay cut the chunk out without parsing every event first.
std::optional<std::vector<std::pair<std::size_t, std::size_t>>> locate_usage_only_events(
    std::string_view events);

/// Follows one engine stream: feed every SSE event; tells when content first appears and what the usage
/// was at the end.
class StreamUsageTracker {
 public:
  enum class Mode {
    full,  // every event is parsed: the returned info is always complete
    fast,  // once content was seen, events whose data mention neither "usage", "error", "[DONE]" nor a
           // finish_reason that is not null are not parsed (info.skipped): enough for TTFB, usage, the
           // reply's end and usage-chunk dropping in a relay
  };
  explicit StreamUsageTracker(ApiKind api, Mode mode = Mode::full) : api_(api), mode_(mode) {}

  /// The event's info (see Mode for when it is left unparsed).
  StreamEventInfo on_event(std::string_view event_name, std::string_view data);

  bool saw_content() const noexcept { return saw_content_; }
  bool saw_done() const noexcept { return saw_done_; }
  bool saw_error() const noexcept { return saw_error_; }
  /// Usage if any usage figure was seen, else nullopt.
  std::optional<Usage> usage() const;

 private:
  ApiKind api_;
  Mode mode_;
  bool saw_content_ = false;
  bool saw_done_ = false;
  bool saw_error_ = false;
  std::optional<std::int64_t> prompt_, cached_, completion_;
  std::optional<ReplyEnd> end_;
};

}  // namespace warden::protocol
