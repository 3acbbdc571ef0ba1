#include "bench/stream.hpp"

#include <boost/json.hpp>

namespace warden::bench {

namespace {

// The generated text of one content event: Anthropic content_block_delta.delta.text, OpenAI
// choices[0].delta.content. Other content (tool calls, reasoning) adds no text to the history here.
void append_text(protocol::ApiKind api, std::string_view data, std::string& out) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(data, ec);
  if (ec || !v.is_object()) {
    return;
  }
  const boost::json::object& o = v.get_object();
  if (api == protocol::ApiKind::anthropic_messages) {
    const boost::json::value* delta = o.if_contains("delta");
    if (delta != nullptr && delta->is_object()) {
      const boost::json::value* text = delta->get_object().if_contains("text");
      if (text != nullptr && text->is_string()) {
        out += text->get_string();
      }
    }
    return;
  }
  const boost::json::value* choices = o.if_contains("choices");
  if (choices == nullptr || !choices->is_array() || choices->get_array().empty()) {
    return;
  }
  const boost::json::value& first = choices->get_array().front();
  if (!first.is_object()) {
    return;
  }
  const boost::json::value* delta = first.get_object().if_contains("delta");
  if (delta == nullptr || !delta->is_object()) {
    return;
  }
  const boost::json::value* content = delta->get_object().if_contains("content");
  if (content != nullptr && content->is_string()) {
    out += content->get_string();
  }
}

}  // namespace

void StreamReader::on_event(const protocol::SseEvent& ev) {
  const protocol::StreamEventInfo info = tracker_.on_event(ev.event, ev.data);
  if (info.done) {
    saw_end_ = true;
    return;
  }
  const std::string_view type = ev.event;
  if (type == "message_stop" || ev.data.find("\"message_stop\"") != std::string::npos) {
    saw_end_ = true;
  }
  if (info.error && error_text_.empty()) {
    error_text_ = ev.data.substr(0, 300);
  }
  if (info.content) {
    ++content_events_;
    append_text(api_, ev.data, reply_);
  }
}

bool StreamReader::feed(std::string_view bytes) {
  const bool had_content = tracker_.saw_content();
  auto r = parser_.feed(bytes, [this](const protocol::SseEvent& ev) { on_event(ev); });
  if (!r && !parse_failed_) {
    parse_failed_ = true;
    error_text_ = "stream event too large";
  }
  return !had_content && tracker_.saw_content();
}

bool StreamReader::finish() {
  parser_.finish();
  if (!saw_end_ && error_text_.empty()) {
    error_text_ = "stream ended without an end marker";
  }
  return saw_end_ && !saw_error();
}

std::int64_t StreamReader::output_tokens() const {
  const std::optional<protocol::Usage> u = tracker_.usage();
  if (u && u->completion_tokens > 0) {
    return u->completion_tokens;
  }
  return content_events_;
}

}  // namespace warden::bench
