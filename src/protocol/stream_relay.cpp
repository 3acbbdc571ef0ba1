#include "protocol/stream_relay.hpp"

#include "protocol/error_body.hpp"

namespace warden::protocol {

StreamRelay::Step StreamRelay::feed(std::string_view piece) {
  const bool clean_end = piece.ends_with("\n\n");
  const bool whole_events = between_events_ && clean_end;
  between_events_ = clean_end;
  const bool pass = !drop_usage_chunk_ || (whole_events && piece.find("usage") == std::string_view::npos);
  if (pass) {
    unparsed_ = piece;
    parse_after_ = true;
    return {piece};
  }
  if (whole_events) {
    if (const auto cut = locate_usage_only_events(piece)) {
      out_.clear();
      std::size_t at = 0;
      for (const auto& [begin, end] : *cut) {
        out_.append(piece.substr(at, begin - at));
        at = end;
      }
      out_.append(piece.substr(at));
      unparsed_ = piece;
      parse_after_ = true;
      return {out_};
    }
  }
  // Parsed first: the kept events' raw bytes are relayed.
  parse_after_ = false;
  parser_.capture_raw(true);
  out_.clear();
  const auto fed = parser_.feed(piece, [&](const SseEvent& ev) {
    const bool usage_only = tracker_.on_event(ev.event, ev.data).usage_only;
    // Decided as the other paths do, so that how the stream is cut does not matter: only an event that
    // spells "usage" plainly, and by the cut path's look where it can tell (also on broken JSON).
    if (ev.data.find("usage") == std::string::npos || !openai_usage_only(ev.data).value_or(usage_only)) {
      out_ += ev.raw;
    }
  });
  if (!fed) {
    return {{}, true};
  }
  return {out_};
}

bool StreamRelay::after_write() {
  if (!parse_after_) {
    return true;
  }
  parse_after_ = false;
  parser_.capture_raw(false);
  const auto fed = parser_.feed(unparsed_, [&](const SseEvent& ev) { tracker_.on_event(ev.event, ev.data); });
  unparsed_ = {};
  // Without filtering, a stream the parser gave up on still goes out; only its accounting stops.
  return fed || !drop_usage_chunk_;
}

std::string stream_error_event(ApiKind api, std::string_view message, bool mid_event, int status,
                               std::string_view code) {
  std::string out = mid_event ? "\n\n" : "";
  if (error_format_for(api) == ErrorFormat::anthropic) {
    out += "event: error\ndata: ";
    out += format_error(ErrorFormat::anthropic, status, message);
  } else {
    out += "data: ";
    out += format_error(ErrorFormat::openai, status, message, code);
  }
  out += "\n\n";
  return out;
}

std::string_view stream_keep_alive_event(ApiKind api) {
  if (error_format_for(api) == ErrorFormat::anthropic) {
    return "event: ping\ndata: {\"type\": \"ping\"}\n\n";
  }
  // The Responses API's own keep-alive (its clients, Codex among them, time out on events, not bytes);
  // a chat completion's client would take any `data:` line for a chunk.
  return api == ApiKind::openai_responses ? "event: keepalive\ndata: {\"type\":\"keepalive\"}\n\n"
                                          : ": keep-alive\n\n";
}

}  // namespace warden::protocol
