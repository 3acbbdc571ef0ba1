// The SSE parser: fed in any fragmentation it delivers the same events (and the same error, the same
// end-of-stream verdict) as fed whole, the raw bytes of its events are the stream's, and an event
// written back with format_sse parses to itself. Input: flags byte, split seed byte, then the stream.

#include "fuzz/fuzz_support.hpp"
#include "protocol/sse.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace warden::protocol;

struct Ev {
  std::string event, data, id, raw;
};

struct Parsed {
  std::vector<Ev> events;
  bool failed = false;
  bool partial_discarded = false;
  std::uint64_t comments = 0;
};

Parsed parse(const std::vector<std::string_view>& pieces, SseLimits limits) {
  SseParser p(limits);
  Parsed out;
  auto on = [&](const SseEvent& e) { out.events.push_back({e.event, e.data, e.id, e.raw}); };
  for (std::string_view piece : pieces) {
    if (!p.feed(piece, on)) {
      out.failed = true;
      break;
    }
  }
  FUZZ_CHECK(p.failed() == out.failed);
  if (!out.failed) {
    out.partial_discarded = p.finish();
    FUZZ_CHECK(p.events() == out.events.size());
  }
  out.comments = p.comments();
  return out;
}

// An event written back parses to one event with the same name and data.
void check_round_trip(const Ev& ev) {
  SseParser p;
  std::vector<Ev> back;
  FUZZ_CHECK(p.feed(format_sse(ev.event, ev.data), [&](const SseEvent& e) {
    back.push_back({e.event, e.data, {}, {}});
  }));
  FUZZ_CHECK(back.size() == 1);
  FUZZ_CHECK(back[0].event == ev.event);
  FUZZ_CHECK(back[0].data == ev.data);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  warden::fuzz::Input in(data, size);
  const std::uint8_t flags = in.byte();
  const std::uint8_t seed = in.byte();
  const std::string_view stream = in.rest();
  SseLimits limits;
  limits.capture_raw = true;
  if ((flags & 1) != 0) {
    limits.max_event_bytes = 16 + flags;  // small enough for inputs to reach it
  }

  const Parsed whole = parse({stream}, limits);
  const Parsed cut = parse(warden::fuzz::split(stream, seed), limits);
  FUZZ_CHECK(cut.failed == whole.failed);
  FUZZ_CHECK(cut.partial_discarded == whole.partial_discarded);
  FUZZ_CHECK(cut.events.size() == whole.events.size());
  std::string raw_whole;
  std::string raw_cut;
  for (std::size_t i = 0; i < whole.events.size(); ++i) {
    FUZZ_CHECK(cut.events[i].event == whole.events[i].event);
    FUZZ_CHECK(cut.events[i].data == whole.events[i].data);
    FUZZ_CHECK(cut.events[i].id == whole.events[i].id);
    raw_whole += whole.events[i].raw;
    raw_cut += cut.events[i].raw;
  }
  if (!whole.failed) {
    FUZZ_CHECK(cut.comments == whole.comments);
  }
  // A CRLF split between pieces moves its LF to the next event's raw (sse.hpp), so the bytes may differ
  // by such LFs; what a reader gets from them may not.
  if (!whole.failed) {
    FUZZ_CHECK(warden::fuzz::sse_events(raw_cut) == warden::fuzz::sse_events(raw_whole));
  }
  // Each raw is the stream's own bytes, in order (the lines of an event without data are not in any).
  std::size_t at = 0;
  for (const Ev& ev : whole.events) {
    at = stream.find(ev.raw, at);
    FUZZ_CHECK(at != std::string_view::npos);
    at += ev.raw.size();
  }
  for (const Ev& ev : whole.events) {
    check_round_trip(ev);
  }
  return 0;
}
