#include "protocol/stream_relay.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace warden::protocol {
namespace {

const std::string role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
const std::string content = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
const std::string usage_chunk =
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\n";
const std::string done = "data: [DONE]\n\n";

struct Relayed {
  std::string sent;
  bool stopped = false;
  std::vector<bool> content_after;  // saw_content() after each piece
};

// Feeds the pieces as a relay would: send what feed() returns, then after_write().
Relayed relay_all(StreamRelay& relay, const std::vector<std::string>& pieces) {
  Relayed out;
  for (const auto& piece : pieces) {
    const auto step = relay.feed(piece);
    if (step.stop) {
      out.stopped = true;
      break;
    }
    out.sent.append(step.send);
    if (!relay.after_write()) {
      out.stopped = true;
      break;
    }
    out.content_after.push_back(relay.saw_content());
  }
  return out;
}

// Every split of `bytes` into three pieces.
std::vector<std::vector<std::string>> three_way_splits(const std::string& bytes) {
  std::vector<std::vector<std::string>> splits;
  for (std::size_t a = 0; a <= bytes.size(); a += 3) {
    for (std::size_t b = a; b <= bytes.size(); b += 7) {
      splits.push_back({bytes.substr(0, a), bytes.substr(a, b - a), bytes.substr(b)});
    }
  }
  return splits;
}

TEST(StreamRelayTest, PassesPlainEventsAsTheyCame) {
  StreamRelay relay(ApiKind::openai_chat, true);
  const std::string piece = role + content;
  const auto step = relay.feed(piece);
  EXPECT_EQ(step.send.data(), piece.data());  // the engine's bytes themselves, not a copy
  EXPECT_FALSE(step.stop);
  EXPECT_FALSE(relay.saw_content());  // parsed after the write
  EXPECT_TRUE(relay.after_write());
  EXPECT_TRUE(relay.saw_content());
}

TEST(StreamRelayTest, CutsTheUsageChunkOutOfWholeEvents) {
  StreamRelay relay(ApiKind::openai_chat, true);
  const auto r = relay_all(relay, {role + content, usage_chunk + done});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.sent, role + content + done);
  ASSERT_TRUE(relay.usage());
  EXPECT_EQ(*relay.usage(), (Usage{7, std::nullopt, 2}));
}

TEST(StreamRelayTest, KeepsTheUsageChunkWhenAskedFor) {
  const std::string stream = role + content + usage_chunk + done;
  for (const auto& pieces : three_way_splits(stream)) {
    StreamRelay each(ApiKind::openai_chat, false);
    const auto r = relay_all(each, pieces);
    EXPECT_EQ(r.sent, stream);
    ASSERT_TRUE(each.usage());
    EXPECT_EQ(each.usage()->prompt_tokens, 7);
  }
  // Nothing filtered: an event the parser gives up on still goes out; only its accounting stops.
  StreamRelay small(ApiKind::openai_chat, false, SseLimits{.max_event_bytes = 32});
  const auto r = relay_all(small, {content, usage_chunk + done});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.sent, content + usage_chunk + done);
}

TEST(StreamRelayTest, EventsSplitAcrossPiecesAreParsedFirst) {
  const std::string stream = role + content + usage_chunk + done;
  for (const auto& pieces : three_way_splits(stream)) {
    StreamRelay relay(ApiKind::openai_chat, true);
    const auto r = relay_all(relay, pieces);
    EXPECT_FALSE(r.stopped);
    EXPECT_EQ(r.sent, role + content + done) << pieces[0].size() << "/" << pieces[1].size();
    ASSERT_TRUE(relay.usage());
    EXPECT_EQ(relay.usage()->completion_tokens, 2);
    EXPECT_TRUE(relay.saw_content());
  }
}

TEST(StreamRelayTest, OneByteAtATime) {
  const std::string stream = content + usage_chunk + done;
  std::vector<std::string> bytes;
  for (char c : stream) {
    bytes.emplace_back(1, c);
  }
  StreamRelay relay(ApiKind::openai_chat, true);
  const auto r = relay_all(relay, bytes);
  EXPECT_EQ(r.sent, content + done);
  // Content is seen with the byte that ends its event, not before.
  const std::size_t end_of_content = content.size() - 1;
  EXPECT_FALSE(r.content_after[end_of_content - 1]);
  EXPECT_TRUE(r.content_after[end_of_content]);
}

TEST(StreamRelayTest, CrLfEventsAreParsedAndKeptByteForByte) {
  auto crlf = [](std::string s) {
    std::string out;
    for (char c : s) {
      out += c == '\n' ? std::string("\r\n") : std::string(1, c);
    }
    return out;
  };
  StreamRelay relay(ApiKind::openai_chat, true);
  const auto r = relay_all(relay, {crlf(content), crlf(usage_chunk) + crlf(done)});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.sent, crlf(content) + crlf(done));
  ASSERT_TRUE(relay.usage());
  EXPECT_EQ(relay.usage()->prompt_tokens, 7);
}

TEST(StreamRelayTest, OversizedEventStopsAFilteredStream) {
  const std::string big =
      "data: {\"choices\":[{\"delta\":{\"content\":\"" + std::string(100, 'x') + "\"}}]}\n\n";
  // Cut between pieces, it is parsed first: the parser's failure ends the stream before the write.
  StreamRelay first(ApiKind::openai_chat, true, SseLimits{.max_event_bytes = 64});
  const auto split = relay_all(first, {content, big.substr(0, 50), big.substr(50)});
  EXPECT_TRUE(split.stopped);
  EXPECT_EQ(split.sent, content);
  // Passed through, the parser's failure after the write ends it too: no later usage chunk can be found.
  StreamRelay after(ApiKind::openai_chat, true, SseLimits{.max_event_bytes = 64});
  const auto whole = relay_all(after, {big, usage_chunk + done});
  EXPECT_TRUE(whole.stopped);
  EXPECT_EQ(whole.sent, big);
}

TEST(StreamRelayTest, OtherApisPassEverything) {
  const std::string anthropic =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}"
      "\n\nevent: content_block_delta\ndata: "
      "{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"a\"}}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":3}}\n\n";
  for (const auto& pieces : three_way_splits(anthropic)) {
    StreamRelay relay(ApiKind::anthropic_messages, false);
    const auto r = relay_all(relay, pieces);
    EXPECT_EQ(r.sent, anthropic);
    ASSERT_TRUE(relay.usage());
    EXPECT_EQ(*relay.usage(), (Usage{5, std::nullopt, 3}));
    EXPECT_TRUE(relay.saw_content());
  }
}

// An event shaped like the usage chunk in another API's stream is kept however the stream is cut (the
// cut path used to drop it from whole events while the parse-first path kept it).
TEST(StreamRelayTest, DropIsIgnoredForApisWithoutAUsageChunk) {
  const std::string stream = content + usage_chunk + done;
  for (const auto& pieces : three_way_splits(stream)) {
    StreamRelay relay(ApiKind::anthropic_messages, true);
    EXPECT_EQ(relay_all(relay, pieces).sent, stream);
  }
}

// A usage chunk that is not valid JSON (here a key with invalid UTF-8) is dropped or kept alike whether it
// arrives whole (cut by its look) or split (parsed first); it used to be dropped only when whole.
TEST(StreamRelayTest, BrokenUsageChunkIsTreatedAlikeOnEveryPath) {
  const std::string broken = "data: {\"choices\": [], \"usage\": {\"comp\x94\x9a\": 1}}\n\n";
  const std::string stream = content + broken + done;
  for (const auto& pieces : three_way_splits(stream)) {
    StreamRelay relay(ApiKind::openai_completions, true);
    EXPECT_EQ(relay_all(relay, pieces).sent, content + done) << pieces[0].size() << "/" << pieces[1].size();
  }
}

// A usage chunk with an escaped key ("us\u0061ge") is kept on every path (the pass-through and cut paths
// look for the plain spelling; the parse-first path used to drop it after decoding).
TEST(StreamRelayTest, EscapedUsageKeyIsKeptOnEveryPath) {
  const std::string escaped = "data: {\"choices\":[],\"us\\u0061ge\":{\"prompt_tokens\":1}}\n\n";
  const std::string stream = content + escaped + usage_chunk + done;
  for (const auto& pieces : three_way_splits(stream)) {
    StreamRelay relay(ApiKind::openai_chat, true);
    EXPECT_EQ(relay_all(relay, pieces).sent, content + escaped + done)
        << pieces[0].size() << "/" << pieces[1].size();
  }
}

}  // namespace
// A stream that breaks off ends with an error the client's SDK raises: one SSE event in its own format
// that an SseParser reads whole, also after bytes that ended mid-event.
TEST(StreamRelayTest, ErrorEventInEachApisFormat) {
  const std::string anthropic = stream_error_event(ApiKind::anthropic_messages, "engine \"x\" broke off");
  EXPECT_EQ(anthropic,
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":"
            "\"engine \\\"x\\\" broke off\"}}\n\n");
  const std::string openai = stream_error_event(ApiKind::openai_chat, "cut");
  EXPECT_TRUE(openai.starts_with("data: {\"error\":{\"message\":\"cut\"")) << openai;
  EXPECT_TRUE(openai.ends_with("}}\n\n")) << openai;
  for (const bool mid : {false, true}) {
    SseParser parser;
    std::vector<std::string> data;
    const std::string before = mid ? "data: {\"choi" : content;
    ASSERT_TRUE(parser.feed(before + stream_error_event(ApiKind::openai_completions, "cut", mid),
                            [&](const SseEvent& ev) { data.emplace_back(ev.data); }));
    ASSERT_FALSE(data.empty());
    EXPECT_TRUE(data.back().starts_with("{\"error\":")) << data.back();
  }
  StreamRelay relay(ApiKind::openai_chat, false);
  relay.feed("data: {\"choi");
  relay.after_write();
  EXPECT_FALSE(relay.between_events());
  relay.feed("ces\":[]}\n\n");
  relay.after_write();
  EXPECT_TRUE(relay.between_events());
}

// A held stream's error carries the status it would have been answered with, and its keep-alive is the
// API's own: an event Anthropic's SDKs skip, a comment every SSE parser ignores.
TEST(StreamRelayTest, HeldStreamEventsInEachApisFormat) {
  EXPECT_NE(stream_error_event(ApiKind::anthropic_messages, "draining", false, 503, "draining")
                .find(R"("type":"overloaded_error")"),
            std::string::npos);
  const std::string openai = stream_error_event(ApiKind::openai_chat, "full", false, 503, "queue_full");
  EXPECT_NE(openai.find(R"("type":"server_error")"), std::string::npos) << openai;
  EXPECT_NE(openai.find(R"("code":"queue_full")"), std::string::npos) << openai;
  for (const ApiKind api : {ApiKind::anthropic_messages, ApiKind::openai_chat, ApiKind::openai_responses}) {
    SseParser parser;
    std::vector<std::string> events;
    ASSERT_TRUE(parser.feed(std::string(stream_keep_alive_event(api)) + content,
                            [&](const SseEvent& ev) { events.emplace_back(ev.event); }));
    const bool own_event = api != ApiKind::openai_chat;
    ASSERT_EQ(events.size(), own_event ? 2u : 1u) << "a comment is no event";
    EXPECT_EQ(events.front(), api == ApiKind::anthropic_messages ? "ping" : own_event ? "keepalive" : "");
  }
}

}  // namespace warden::protocol
