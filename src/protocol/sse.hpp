#pragma once
// Server-Sent Events codec, sans-I/O (WHATWG "event stream interpretation").
//
// Parser: feed arbitrary byte fragments (down to 1 byte); complete events are delivered to a callback.
//   SseParser p;
//   auto r = p.feed(chunk, [&](const SseEvent& ev) { ... ev.event, ev.data ... });
//   if (!r) { /* Errc::sse_event_too_large: stop reading this stream */ }
// Lines end in CRLF, LF or CR (a CR at the end of one fragment followed by LF at the start of the
// next is one line end). "data:" lines are joined with '\n'; one space after the colon is dropped;
// lines starting with ':' are comments (counted, not delivered); "retry:" and unknown fields are ignored;
// a leading UTF-8 BOM is skipped. A blank line dispatches the event; as the standard says, an event
// with no data line is not dispatched, and a partial event at end of stream is discarded.
// The SseEvent reference passed to the callback is valid only during the call.

#include "protocol/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace warden::protocol {

struct SseEvent {
  std::string event;  // "event:" field; empty means the default type "message"
  std::string data;   // "data:" lines joined with '\n' (no trailing newline)
  std::string id;     // last "id:" seen in this stream (sticky across events, per the standard)
  // The event's bytes exactly as received (preceding comment lines included, up to and including its
  // blank line); only with SseLimits::capture_raw. If a CRLF is split between two fragments, its LF is
  // counted with the next event, so the concatenation of all raws still reproduces the stream.
  std::string raw;
};

struct SseLimits {
  /// Largest event accepted (bytes of its field lines, incl. comments and line ends, a CRLF counting as
  /// one byte so that the verdict does not depend on fragmentation). A larger event
  /// (or a single line that long with no end in sight) is an error, so a hostile upstream cannot make
  /// the parser buffer without bound.
  std::size_t max_event_bytes = 16u << 20;
  /// Keep each event's raw bytes in SseEvent::raw (so a relay can forward events byte-for-byte and
  /// still drop selected ones). Costs one extra copy of the stream.
  bool capture_raw = false;
};

class SseParser {
 public:
  explicit SseParser(SseLimits limits = {}) : limits_(limits) {}

  /// Consumes `bytes` and calls `on_event(const SseEvent&)` for each event completed by them.
  /// After an error the parser stays failed: every later feed() returns the same error.
  template <class F>
  Result<void> feed(std::string_view bytes, F&& on_event) {
    auto thunk = [](void* ctx, const SseEvent& ev) { (*static_cast<std::remove_reference_t<F>*>(ctx))(ev); };
    return feed_impl(bytes, thunk, &on_event);
  }

  /// End of stream. Returns true if an incomplete event (data seen, no blank line yet) was discarded.
  bool finish() noexcept;

  /// Turns SseLimits::capture_raw on or off from the next event on (call it between events).
  void capture_raw(bool on) noexcept { limits_.capture_raw = on; }

  /// Events dispatched so far.
  std::uint64_t events() const noexcept { return events_; }
  /// Comment lines seen (": keep-alive" pings and the like).
  std::uint64_t comments() const noexcept { return comments_; }
  bool failed() const noexcept { return failed_; }

 private:
  using Thunk = void (*)(void*, const SseEvent&);
  Result<void> feed_impl(std::string_view bytes, Thunk thunk, void* ctx);
  void process_line(std::string_view line, Thunk thunk, void* ctx);

  SseLimits limits_;
  std::string line_;  // current line being assembled (without its end)
  SseEvent ev_;       // event being assembled
  bool has_data_ = false;
  bool last_cr_ = false;  // previous byte was CR: a following LF belongs to the same line end
  bool bom_checked_ = false;
  bool failed_ = false;
  std::size_t event_bytes_ = 0;  // bytes of the event being assembled
  std::uint64_t events_ = 0;
  std::uint64_t comments_ = 0;
};

/// "data: [DONE]\n\n": the OpenAI end-of-stream marker (vLLM also sends it after Anthropic streams).
inline constexpr std::string_view sse_done = "data: [DONE]\n\n";

/// True for an event whose data is exactly "[DONE]".
inline bool is_done(const SseEvent& ev) noexcept {
  return ev.data == "[DONE]";
}

/// Appends one event: "event: <event>\n" (omitted if empty), one "data: " line per line of `data`
/// (split on CRLF/LF/CR), then a blank line. CR/LF in `event` are removed so it cannot inject fields.
void append_sse(std::string& out, std::string_view event, std::string_view data);

/// Returns one formatted event (see append_sse).
std::string format_sse(std::string_view event, std::string_view data);

/// Returns a data-only event ("data: ...\n\n").
inline std::string format_sse(std::string_view data) {
  return format_sse({}, data);
}

}  // namespace warden::protocol
