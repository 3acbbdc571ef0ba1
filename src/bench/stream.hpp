// Reads one streamed engine response as the bench sees it (sans-I/O): when the first content token
// arrived, the reply text to append to the conversation, the output token count, and whether the stream
// ended properly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/api.hpp"
#include "protocol/sse.hpp"
#include "protocol/usage.hpp"

namespace warden::bench {

class StreamReader {
 public:
  explicit StreamReader(protocol::ApiKind api) : api_(api), tracker_(api) {}

  // Feeds body bytes (any fragmentation). Returns true when this piece held the first content token.
  bool feed(std::string_view bytes);
  // End of body: true when the stream ended as a complete response (end marker or final usage, no error).
  bool finish();

  bool saw_content() const { return tracker_.saw_content(); }
  bool saw_error() const { return tracker_.saw_error() || parse_failed_; }
  const std::string& reply() const { return reply_; }
  // Output tokens: the engine's usage when it reported one, else the number of content events.
  std::int64_t output_tokens() const;
  std::optional<protocol::Usage> usage() const { return tracker_.usage(); }
  // A short description of an error event or broken stream, for logs.
  const std::string& error_text() const { return error_text_; }

 private:
  void on_event(const protocol::SseEvent& ev);

  protocol::ApiKind api_;
  protocol::SseParser parser_;
  protocol::StreamUsageTracker tracker_;
  std::string reply_;
  std::string error_text_;
  std::int64_t content_events_ = 0;
  bool saw_end_ = false;  // message_stop / [DONE]
  bool parse_failed_ = false;
};

}  // namespace warden::bench
