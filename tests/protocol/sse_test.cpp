#include "protocol/sse.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace warden::protocol {
namespace {

struct Ev {
  std::string event, data, id, raw;
  bool operator==(const Ev&) const = default;
};

std::vector<Ev> parse_all(std::string_view text, std::vector<std::size_t> cuts, SseLimits limits = {}) {
  SseParser p(limits);
  std::vector<Ev> out;
  auto on = [&](const SseEvent& e) { out.push_back({e.event, e.data, e.id, e.raw}); };
  std::size_t pos = 0;
  cuts.push_back(text.size());
  for (std::size_t c : cuts) {
    EXPECT_TRUE(p.feed(text.substr(pos, c - pos), on));
    pos = c;
  }
  return out;
}

const std::string kAnthropic =
    "event: message_start\r\n"
    "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12}}}\r\n"
    "\r\n"
    ": keep-alive\n"
    "event: content_block_delta\r"
    "data: {\"type\":\"content_block_delta\",\r"
    "data: \"delta\":{\"text\":\"Hi\"}}\r"
    "\r"
    "id: 7\n"
    "data:no-space\n"
    "\n"
    "data: [DONE]\n\n";

TEST(SseTest, ParsesAllLineEndingsFieldsAndComments) {
  SseParser p;
  std::vector<Ev> out;
  ASSERT_TRUE(p.feed(kAnthropic, [&](const SseEvent& e) { out.push_back({e.event, e.data, e.id, {}}); }));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].event, "message_start");
  EXPECT_EQ(out[0].data, R"({"type":"message_start","message":{"usage":{"input_tokens":12}}})");
  EXPECT_EQ(out[1].event, "content_block_delta");
  EXPECT_EQ(out[1].data, "{\"type\":\"content_block_delta\",\n\"delta\":{\"text\":\"Hi\"}}");
  EXPECT_EQ(out[2].event, "");
  EXPECT_EQ(out[2].data, "no-space");
  EXPECT_EQ(out[2].id, "7");
  EXPECT_EQ(out[3].id, "7");  // the last event id is sticky
  EXPECT_EQ(out[3].data, "[DONE]");
  EXPECT_EQ(p.comments(), 1u);
  EXPECT_EQ(p.events(), 4u);
}

// Fields must not depend on fragmentation. Raw bytes may not either, except that the LF of a CRLF
// arriving in the next fragment is attributed to the next event: the concatenation is still exact.
void expect_same(const std::vector<Ev>& got, const std::vector<Ev>& whole, const std::string& where) {
  ASSERT_EQ(got.size(), whole.size()) << where;
  std::string raw_got;
  std::string raw_whole;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].event, whole[i].event) << where;
    EXPECT_EQ(got[i].data, whole[i].data) << where;
    EXPECT_EQ(got[i].id, whole[i].id) << where;
    raw_got += got[i].raw;
    raw_whole += whole[i].raw;
  }
  EXPECT_EQ(raw_got.substr(0, raw_whole.size()), raw_whole) << where;
}

TEST(SseTest, EverySplitPointAndOneByteAtATime) {
  SseLimits limits;
  limits.capture_raw = true;
  const auto whole = parse_all(kAnthropic, {}, limits);
  ASSERT_EQ(whole.size(), 4u);
  // The comment line is not an event of its own; it travels in the raw bytes of the next event.
  EXPECT_EQ(whole[1].raw.substr(0, 13), ": keep-alive\n");
  for (std::size_t cut = 0; cut <= kAnthropic.size(); ++cut) {
    expect_same(parse_all(kAnthropic, {cut}, limits), whole, "cut " + std::to_string(cut));
  }
  for (std::size_t a = 0; a <= kAnthropic.size(); a += 7) {
    for (std::size_t b = a; b <= kAnthropic.size(); b += 5) {
      expect_same(parse_all(kAnthropic, {a, b}, limits), whole, std::to_string(a) + "," + std::to_string(b));
    }
  }
  std::vector<std::size_t> every;
  for (std::size_t i = 1; i < kAnthropic.size(); ++i) {
    every.push_back(i);
  }
  expect_same(parse_all(kAnthropic, every, limits), whole, "every byte");
}

TEST(SseTest, RawBytesReassembleTheStream) {
  SseLimits limits;
  limits.capture_raw = true;
  const std::string stream = "data: a\n\n: ping\n\nevent: x\ndata: b\r\n\r\ndata: [DONE]\n\n";
  std::string joined;
  for (const auto& e : parse_all(stream, {3, 11, 30}, limits)) {
    joined += e.raw;
  }
  // Everything except the comment-only block (not an event) comes back byte for byte.
  EXPECT_EQ(joined, "data: a\n\nevent: x\ndata: b\r\n\r\ndata: [DONE]\n\n");
}

TEST(SseTest, EventWithoutDataIsNotDispatchedAndPartialIsDiscarded) {
  SseParser p;
  int n = 0;
  ASSERT_TRUE(p.feed("event: ping\n\ndata: half", [&](const SseEvent&) { ++n; }));
  EXPECT_EQ(n, 0);
  EXPECT_TRUE(p.finish());
  ASSERT_TRUE(p.feed("data: next\n\n", [&](const SseEvent& e) {
    ++n;
    EXPECT_EQ(e.data, "next");
    EXPECT_EQ(e.event, "");
  }));
  EXPECT_EQ(n, 1);
}

TEST(SseTest, BomAndEmptyData) {
  std::vector<Ev> out = parse_all(
      "\xEF\xBB\xBF"
      "data\n\ndata:\ndata:\n\n",
      {1, 2});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data, "");
  EXPECT_EQ(out[1].data, "\n");
}

TEST(SseTest, HugeLineIsAnErrorNotUnboundedBuffering) {
  SseLimits limits;
  limits.max_event_bytes = 1024;
  SseParser p(limits);
  auto ignore = [](const SseEvent&) {};
  const std::string chunk(300, 'x');
  ASSERT_TRUE(p.feed("data: ", ignore));
  bool failed = false;
  for (int i = 0; i < 10 && !failed; ++i) {
    failed = !p.feed(chunk, ignore);
  }
  EXPECT_TRUE(failed);
  EXPECT_TRUE(p.failed());
  auto again = p.feed("\n\n", ignore);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error(), Errc::sse_event_too_large);
}

TEST(SseTest, ManyLinesInOneEventHitTheLimit) {
  SseLimits limits;
  limits.max_event_bytes = 4096;
  SseParser p(limits);
  std::string many;
  for (int i = 0; i < 1000; ++i) {
    many += "data: 0123456789\n";
  }
  EXPECT_FALSE(p.feed(many, [](const SseEvent&) {}));
}

TEST(SseTest, BinaryGarbageNeverCrashes) {
  std::uint64_t x = 88172645463325252ull;
  for (int round = 0; round < 200; ++round) {
    SseLimits limits;
    limits.max_event_bytes = 2048;
    limits.capture_raw = (round % 2) == 0;
    SseParser p(limits);
    std::string junk;
    for (int i = 0; i < 4000; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      junk += static_cast<char>(x & 0xFF);
    }
    std::size_t events = 0;
    std::size_t pos = 0;
    while (pos < junk.size()) {
      const std::size_t n = 1 + (x >> 40) % 97;
      auto r = p.feed(std::string_view(junk).substr(pos, n), [&](const SseEvent& e) {
        ++events;
        EXPECT_LE(e.data.size(), 2048u);
      });
      if (!r) {
        break;
      }
      pos += n;
      x = x * 6364136223846793005ull + 1;
    }
    p.finish();
    EXPECT_LE(events, junk.size());
  }
}

TEST(SseTest, WriterRoundTrips) {
  EXPECT_EQ(format_sse("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(format_sse("message_stop", "{}"), "event: message_stop\ndata: {}\n\n");
  EXPECT_EQ(format_sse("a\r\nb", "x"), "event: ab\ndata: x\n\n");
  EXPECT_EQ(sse_done, "data: [DONE]\n\n");
  for (std::string data : {"one", "two\nlines", "crlf\r\nand\rcr", "", "\n", "trailing\n"}) {
    std::string out;
    append_sse(out, "e", data);
    auto evs = parse_all(out, {});
    ASSERT_EQ(evs.size(), 1u) << data;
    std::string expected = data;
    for (std::size_t i = 0; i < expected.size(); ++i) {  // line ends normalise to \n
      if (expected[i] == '\r') {
        if (i + 1 < expected.size() && expected[i + 1] == '\n') {
          expected.erase(i, 1);
        } else {
          expected[i] = '\n';
        }
      }
    }
    EXPECT_EQ(evs[0].data, expected);
    EXPECT_EQ(evs[0].event, "e");
  }
  EXPECT_TRUE(is_done(SseEvent{.event = "", .data = "[DONE]", .id = "", .raw = ""}));
}

// At the size limit, a CRLF split between fragments counts as a whole one does (its LF used to be
// counted only when it arrived with its CR, so the same stream failed whole and passed in pieces).
TEST(SseTest, SizeLimitDoesNotDependOnWhereACrLfIsCut) {
  const std::string stream = "x: 12345\r\n\r\ndata: b\n\n";
  for (std::size_t limit : {9u, 10u, 11u, 12u}) {
    SseLimits limits;
    limits.max_event_bytes = limit;
    for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
      SseParser whole(limits);
      SseParser pieces(limits);
      auto ignore = [](const SseEvent&) {};
      const bool whole_ok = static_cast<bool>(whole.feed(stream, ignore));
      const bool pieces_ok = pieces.feed(std::string_view(stream).substr(0, cut), ignore) &&
                             pieces.feed(std::string_view(stream).substr(cut), ignore);
      EXPECT_EQ(pieces_ok, whole_ok) << "limit " << limit << " cut " << cut;
      EXPECT_EQ(pieces.events(), whole.events()) << "limit " << limit << " cut " << cut;
    }
  }
}

}  // namespace
}  // namespace warden::protocol
