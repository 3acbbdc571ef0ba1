#pragma once
// What a relay sends of an engine's SSE stream, sans-I/O: feed each piece of engine bytes as it arrives,
// write what feed() returns, then call after_write(). Usage and first content are tracked on the way.
//
// Three paths, cheapest first (docs/performance.md):
//  - pass through: bytes that cannot hold any part of a usage chunk to drop (the piece starts and ends
//    between events and does not mention usage, or nothing is dropped) go out as they came; their
//    events are parsed in after_write(), once the bytes are on their way;
//  - cut: whole events in the plain form engines write go out with the usage chunk cut out by its byte
//    range (locate_usage_only_events); parsed in after_write() too;
//  - parse first: the rare rest (an event cut between pieces, CR line ends, other fields) is parsed
//    before the write and the kept events are relayed (an unfinished event waits in the parser).

#include "protocol/api.hpp"
#include "protocol/sse.hpp"
#include "protocol/usage.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace warden::protocol {

class StreamRelay {
 public:
  /// `drop_usage_chunk`: the usage chunk of an OpenAI stream goes to the relay, not to the client (the
  /// request was rewritten to ask for it; the client did not). Ignored for the APIs without one (else the
  /// cut and parse-first paths would disagree on an event shaped like it).
  StreamRelay(ApiKind api, bool drop_usage_chunk, SseLimits limits = {})
      : tracker_(api, StreamUsageTracker::Mode::fast),
        parser_(limits),
        drop_usage_chunk_(drop_usage_chunk &&
                          (api == ApiKind::openai_chat || api == ApiKind::openai_completions)) {}
  StreamRelay(const StreamRelay&) = delete;
  StreamRelay& operator=(const StreamRelay&) = delete;

  struct Step {
    /// The bytes to send now: the piece itself, or the relay's own buffer (valid until the next feed()).
    std::string_view send;
    /// An event too large to inspect while the usage chunk is dropped: the stream cannot be filtered
    /// safely and must end here (send nothing).
    bool stop = false;
  };

  /// One piece of engine bytes; `piece` must stay valid until after_write() returns.
  Step feed(std::string_view piece);

  /// After the bytes of feed() went out (or failed to): parses the piece if feed() did not. False when an
  /// event too large to inspect means the filtered stream must end here.
  bool after_write();

  /// Whether an event with generated content was seen (the first one is the time-to-first-token point).
  bool saw_content() const noexcept { return tracker_.saw_content(); }
  /// Usage figures seen so far (nullopt if none).
  std::optional<Usage> usage() const { return tracker_.usage(); }
  /// Whether the bytes fed so far end between two events (an error event can follow them as is).
  bool between_events() const noexcept { return between_events_; }

 private:
  StreamUsageTracker tracker_;
  SseParser parser_;
  std::string out_;  // what is sent when the piece is not sent as it came; reused
  std::string_view unparsed_;
  bool drop_usage_chunk_;
  bool between_events_ = true;  // the parser holds no unfinished event
  bool parse_after_ = false;    // feed() left the piece for after_write()
};

/// The event that tells a client its stream broke off, in the API's own format: Anthropic's
/// `event: error` with an api_error, or for OpenAI an error object in a `data:` line (as vLLM and OpenAI
/// send one). `mid_event`: the bytes sent so far end inside an event, which is closed first. `status` and
/// `code`: the error the client would have been answered with before its stream started (Anthropic's
/// error type and OpenAI's type follow the status; OpenAI's code is `code`).
std::string stream_error_event(ApiKind api, std::string_view message, bool mid_event = false,
                               int status = 502, std::string_view code = "upstream_error");

/// What keeps a started stream alive while its first event waits (a held request): the API's own,
/// Anthropic's `event: ping`, the Responses API's `event: keepalive` (OpenAI sends it on long requests), and
/// for chat and completions an SSE comment line (which every SSE client ignores).
std::string_view stream_keep_alive_event(ApiKind api);

}  // namespace warden::protocol
