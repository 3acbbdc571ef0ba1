// The stream usage filter: StreamRelay sends the same bytes and reports the same usage in any
// fragmentation, sends the stream unchanged when it drops nothing, and its fast tracking agrees with a
// full parse of every event; the top-level usage-chunk look and the event locator agree with the parser;
// parse_usage_body accepts only JSON objects. Input: flags byte (API, drop, small limit), split seed byte,
// then the engine stream.

#include "fuzz/fuzz_support.hpp"
#include "protocol/sse.hpp"
#include "protocol/stream_relay.hpp"
#include "protocol/usage.hpp"

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace warden::protocol;

struct Relayed {
  std::string sent;
  bool stopped = false;
  bool saw_content = false;
  std::optional<Usage> usage;
};

// As the gateway relays: send what feed() returns, then after_write().
Relayed relay(ApiKind api, bool drop, SseLimits limits, const std::vector<std::string_view>& pieces) {
  StreamRelay r(api, drop, limits);
  Relayed out;
  for (std::string_view piece : pieces) {
    const auto step = r.feed(piece);
    if (step.stop) {
      out.stopped = true;
      break;
    }
    out.sent.append(step.send);
    if (!r.after_write()) {
      out.stopped = true;
      break;
    }
  }
  out.saw_content = r.saw_content();
  out.usage = r.usage();
  return out;
}

// What the relay must have seen: every event parsed and tracked in full.
struct Reference {
  bool failed = false;
  bool saw_content = false;
  std::optional<Usage> usage;
};

Reference full_parse(ApiKind api, SseLimits limits, std::string_view stream) {
  SseParser p(limits);
  StreamUsageTracker t(api, StreamUsageTracker::Mode::full);
  Reference out;
  out.failed = !p.feed(stream, [&](const SseEvent& ev) {
    const StreamEventInfo info = t.on_event(ev.event, ev.data);
    FUZZ_CHECK(!info.skipped);
    const auto seen = openai_usage_only(ev.data);
    const StreamEventInfo chat = inspect_stream_event(ApiKind::openai_chat, ev.event, ev.data);
    if (seen && chat.json_ok) {
      FUZZ_CHECK(*seen == chat.usage_only);
    }
  });
  out.saw_content = t.saw_content();
  out.usage = t.usage();
  return out;
}

// Each located range is one whole event that the parser reads as the usage chunk (if it is JSON at all).
void check_located(std::string_view stream) {
  const auto ranges = locate_usage_only_events(stream);
  if (!ranges) {
    return;
  }
  std::size_t end = 0;
  for (const auto& [begin, stop] : *ranges) {
    FUZZ_CHECK(begin >= end && begin < stop && stop <= stream.size());
    end = stop;
    SseParser p;
    std::size_t events = 0;
    FUZZ_CHECK(p.feed(stream.substr(begin, stop - begin), [&](const SseEvent& ev) {
      ++events;
      const StreamEventInfo info = inspect_stream_event(ApiKind::openai_chat, ev.event, ev.data);
      FUZZ_CHECK(info.usage_only || !info.json_ok);  // the look is no validator
    }));
    FUZZ_CHECK(events == 1);
  }
}

void check_body(ApiKind api, std::string_view body) {
  const auto u = parse_usage_body(api, body);
  if (u) {
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(body, ec);
    FUZZ_CHECK(!ec && v.is_object());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  warden::fuzz::Input in(data, size);
  const std::uint8_t flags = in.byte();
  const std::uint8_t seed = in.byte();
  const std::string_view stream = in.rest();
  const auto api = static_cast<ApiKind>((flags & 0x07) % 5);
  const bool drop = (flags & 0x08) != 0;
  SseLimits limits;
  if ((flags & 0x10) != 0) {
    limits.max_event_bytes = 16 + flags;  // small enough for inputs to reach it
  }

  const Relayed whole = relay(api, drop, limits, {stream});
  const Relayed cut = relay(api, drop, limits, warden::fuzz::split(stream, seed));
  const Reference ref = full_parse(api, limits, stream);
  FUZZ_CHECK(cut.stopped == whole.stopped);
  if (!whole.stopped) {
    // Cut after the CR of a CRLF, the parser gives the LF to the next event (sse.hpp), so a parsed-first
    // relay may send other line ends than the whole stream had; the client must get the same events.
    FUZZ_CHECK(cut.sent == whole.sent ||
               warden::fuzz::sse_events(cut.sent) == warden::fuzz::sse_events(whole.sent));
    if (!drop) {
      FUZZ_CHECK(whole.sent == stream);
    }
  }
  if (!whole.stopped && !ref.failed) {
    FUZZ_CHECK(whole.saw_content == ref.saw_content && cut.saw_content == ref.saw_content);
    FUZZ_CHECK(whole.usage == ref.usage && cut.usage == ref.usage);
  }
  check_located(stream);
  check_body(api, stream);
  return 0;
}
