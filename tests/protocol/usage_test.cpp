#include "protocol/usage.hpp"
#include "protocol/sse.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace warden::protocol {
namespace {

TEST(UsageTest, OpenAiBody) {
  auto u = parse_usage_body(ApiKind::openai_chat, R"({"id":"x","choices":[{"message":{"content":"hi"}}],
      "usage":{"prompt_tokens":1200,"completion_tokens":34,"total_tokens":1234,
               "prompt_tokens_details":{"cached_tokens":1024}}})");
  ASSERT_TRUE(u);
  EXPECT_EQ(*u, (Usage{1200, 1024, 34}));
  auto missing = parse_usage_body(ApiKind::openai_completions,
                                  R"({"usage":{"prompt_tokens":10,"completion_tokens":2}})");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->cached_tokens, std::nullopt);
  auto null_details = parse_usage_body(
      ApiKind::openai_chat,
      R"({"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":null}})");
  ASSERT_TRUE(null_details);
  EXPECT_EQ(null_details->cached_tokens, std::nullopt);
  auto null_cached = parse_usage_body(
      ApiKind::openai_chat,
      R"({"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":null}}})");
  ASSERT_TRUE(null_cached);
  EXPECT_EQ(null_cached->cached_tokens, std::nullopt);
  auto zero = parse_usage_body(
      ApiKind::openai_chat,
      R"({"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}})");
  EXPECT_EQ(zero->cached_tokens, 0);
}

TEST(UsageTest, BodyErrors) {
  EXPECT_EQ(parse_usage_body(ApiKind::openai_chat, "not json").error(), Errc::not_json_object);
  EXPECT_EQ(parse_usage_body(ApiKind::openai_chat, "[1]").error(), Errc::not_json_object);
  EXPECT_EQ(parse_usage_body(ApiKind::openai_chat, R"({"error":{"message":"x"}})").error(), Errc::no_usage);
  EXPECT_EQ(parse_usage_body(ApiKind::openai_chat, R"({"usage":{"prompt_tokens":-1}})").error(),
            Errc::no_usage);
  EXPECT_EQ(parse_usage_body(ApiKind::openai_chat, R"({"usage":"lots"})").error(), Errc::no_usage);
}

TEST(UsageTest, AnthropicBodyNormalisesPrompt) {
  auto u = parse_usage_body(ApiKind::anthropic_messages, R"({"type":"message","content":[],
      "usage":{"input_tokens":200,"cache_read_input_tokens":1000,"output_tokens":50}})");
  ASSERT_TRUE(u);
  EXPECT_EQ(*u, (Usage{1200, 1000, 50}));
  auto created = parse_usage_body(
      ApiKind::anthropic_messages,
      R"({"usage":{"input_tokens":5,"cache_creation_input_tokens":100,"cache_read_input_tokens":0,"output_tokens":1}})");
  EXPECT_EQ(*created, (Usage{105, 0, 1}));
  auto plain =
      parse_usage_body(ApiKind::anthropic_messages, R"({"usage":{"input_tokens":7,"output_tokens":3}})");
  EXPECT_EQ(*plain, (Usage{7, std::nullopt, 3}));
}

TEST(UsageTest, ResponsesBody) {
  auto u = parse_usage_body(ApiKind::openai_responses, R"({"object":"response","usage":{"input_tokens":900,
      "input_tokens_details":{"cached_tokens":512},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":940}})");
  ASSERT_TRUE(u);
  EXPECT_EQ(*u, (Usage{900, 512, 40}));
}

// Runs a whole SSE stream through the parser and the tracker; returns the index of the first content event.
struct Run {
  std::optional<Usage> usage;
  int first_content = -1;
  std::vector<bool> usage_only;
  bool done = false;
  bool error = false;
};
Run run_stream(ApiKind api, const std::string& stream) {
  SseParser p;
  StreamUsageTracker t(api);
  Run run;
  int i = 0;
  EXPECT_TRUE(p.feed(stream, [&](const SseEvent& e) {
    const bool before = t.saw_content();
    auto info = t.on_event(e.event, e.data);
    if (!before && t.saw_content()) {
      run.first_content = i;
    }
    run.usage_only.push_back(info.usage_only);
    ++i;
  }));
  run.usage = t.usage();
  run.done = t.saw_done();
  run.error = t.saw_error();
  return run;
}

TEST(UsageTest, OpenAiStream) {
  const std::string stream =
      "data: "
      "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
      "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
      "data: "
      "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}"
      "\n\n"
      "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":2,"
      "\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\n"
      "data: [DONE]\n\n";
  auto run = run_stream(ApiKind::openai_chat, stream);
  EXPECT_EQ(run.first_content, 1);
  ASSERT_TRUE(run.usage);
  EXPECT_EQ(*run.usage, (Usage{50, 32, 2, ReplyEnd::text}));  // finish_reason "stop"
  EXPECT_EQ(run.usage_only, (std::vector<bool>{false, false, false, true, false}));
  EXPECT_TRUE(run.done);
  EXPECT_FALSE(run.error);
}

TEST(UsageTest, UsageChunkSeenFromTheTopLevelAgreesWithTheFullParse) {
  const std::string vllm_usage =
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"Qwen/Qwen3-4B",)"
      R"("choices":[],"usage":{"prompt_tokens":30,"total_tokens":34,"completion_tokens":4,)"
      R"("prompt_tokens_details":{"cached_tokens":16}}})";
  const std::vector<std::pair<std::string, bool>> decided = {
      {vllm_usage, true},
      {" { \"choices\" : [ \n ] , \"usage\" : { } } ", true},
      {R"({"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":3}})", false},  // continuous stats
      {R"({"choices":[],"usage":null})", false},
      {R"({"usage":{"prompt_tokens":3}})", false},                                      // no choices at all
      {R"({"choices":[{"delta":{"content":"\"choices\":[],\"usage\":{}"}}]})", false},  // look-alike text
      {R"({"x":{"choices":[],"usage":{}},"choices":[{"index":0}]})", false},            // nested look-alike
      {R"({})", false},
  };
  for (const auto& [data, expected] : decided) {
    const auto seen = openai_usage_only(data);
    ASSERT_TRUE(seen.has_value()) << data;
    EXPECT_EQ(*seen, expected) << data;
    const auto full = inspect_stream_event(ApiKind::openai_chat, "", data);
    ASSERT_TRUE(full.json_ok) << data;
    EXPECT_EQ(full.usage_only, expected) << data;
  }
  // Cases the look leaves to the full parse.
  for (std::string_view data :
       {std::string_view(R"({"ch\u006fices":[],"usage":{}})"),
        std::string_view(R"({"choices":[],"choices":[1],"usage":{}})"),
        std::string_view(R"([{"choices":[]}])"), std::string_view(R"({"choices":[)"),
        std::string_view("[DONE]"), std::string_view(R"({"choices":[],"usage":{}} trailing)")}) {
    EXPECT_FALSE(openai_usage_only(data).has_value()) << data;
  }
}

TEST(UsageTest, UsageOnlyEventsLocatedInPlainEvents) {
  const std::string content = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n";
  const std::string usage =
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n";
  const std::string done = "data: [DONE]\n\n";
  const std::string run = content + usage + done;
  auto at = locate_usage_only_events(run);
  ASSERT_TRUE(at.has_value());
  ASSERT_EQ(at->size(), 1u);
  EXPECT_EQ(run.substr((*at)[0].first, (*at)[0].second - (*at)[0].first), usage);
  // Usage on a content chunk (continuous stats) is kept; nothing to cut without a usage chunk.
  const std::string stats =
      "data: {\"choices\":[{\"delta\":{\"content\":\"y\"}}],\"usage\":{\"prompt_tokens\":3}}\n\n";
  auto none = locate_usage_only_events(content + stats + done);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
  // Not the plain form where it matters: left to the SSE parser.
  for (const std::string& bytes : std::vector<std::string>{
           content + usage.substr(0, 20),                            // an unended event
           "data: {\"choices\":[],\r\n\"usage\":{}}\r\n\r\n",        // CR line ends
           "event: usage\ndata: {\"choices\":[],\"usage\":{}}\n\n",  // another field with it
           ": ping\ndata: {\"choices\":[],\"usage\":{}}\n\n",        // a comment with it
           "data: {\"choices\":[],\n\ndata: \"usage\":{}}\n\n"}) {   // usage in a broken event
    EXPECT_FALSE(locate_usage_only_events(bytes).has_value()) << bytes;
  }
  // A comment elsewhere does not matter.
  auto with_ping = locate_usage_only_events(": ping\n\n" + usage);
  ASSERT_TRUE(with_ping.has_value());
  EXPECT_EQ(with_ping->size(), 1u);
}

TEST(UsageTest, OpenAiChunkClassification) {
  auto usage_chunk = inspect_stream_event(
      ApiKind::openai_chat, "", R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}})");
  EXPECT_TRUE(usage_chunk.usage_only);
  EXPECT_FALSE(usage_chunk.content);
  EXPECT_EQ(usage_chunk.prompt_tokens, 3);
  // continuous usage stats: usage on a content chunk is not a usage-only chunk.
  auto both = inspect_stream_event(
      ApiKind::openai_chat, "",
      R"({"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}})");
  EXPECT_FALSE(both.usage_only);
  EXPECT_TRUE(both.content);
  auto null_usage = inspect_stream_event(ApiKind::openai_chat, "", R"({"choices":[],"usage":null})");
  EXPECT_FALSE(null_usage.usage_only);
  EXPECT_TRUE(inspect_stream_event(ApiKind::openai_chat, "",
                                   R"({"choices":[{"delta":{"tool_calls":[{"index":0}]}}]})")
                  .content);
  EXPECT_TRUE(
      inspect_stream_event(ApiKind::openai_chat, "", R"({"choices":[{"delta":{"reasoning_content":"hm"}}]})")
          .content);
  EXPECT_TRUE(inspect_stream_event(ApiKind::openai_completions, "", R"({"choices":[{"text":"x","index":0}]})")
                  .content);
  EXPECT_FALSE(inspect_stream_event(ApiKind::openai_completions, "", R"({"choices":[{"text":"","index":0}]})")
                   .content);
  auto err =
      inspect_stream_event(ApiKind::openai_chat, "", R"({"error":{"message":"boom","type":"server_error"}})");
  EXPECT_TRUE(err.error);
  EXPECT_FALSE(inspect_stream_event(ApiKind::openai_chat, "", "{not json").json_ok);
  EXPECT_TRUE(inspect_stream_event(ApiKind::openai_chat, "", " [DONE] ").done);
}

TEST(UsageTest, AnthropicStream) {
  const std::string stream =
      "event: message_start\ndata: "
      "{\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"role\":\"assistant\","
      "\"usage\":{\"input_tokens\":300,\"cache_read_input_tokens\":4800,\"output_tokens\":1}}}\n\n"
      "event: content_block_start\ndata: "
      "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "event: ping\ndata: {\"type\":\"ping\"}\n\n"
      "event: content_block_delta\ndata: "
      "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
      "event: content_block_delta\ndata: "
      "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"!\"}}\n\n"
      "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "event: message_delta\ndata: "
      "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":12}}"
      "\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
      "data: [DONE]\n\n";
  auto run = run_stream(ApiKind::anthropic_messages, stream);
  EXPECT_EQ(run.first_content, 3);
  ASSERT_TRUE(run.usage);
  EXPECT_EQ(*run.usage, (Usage{5100, 4800, 12, ReplyEnd::text}));  // stop_reason "end_turn"
  EXPECT_TRUE(run.done);
  // Without cache details: cached not measured.
  auto plain = run_stream(
      ApiKind::anthropic_messages,
      "event: message_start\ndata: "
      "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":0}}}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":4}}\n\n");
  EXPECT_EQ(*plain.usage, (Usage{9, std::nullopt, 4}));
  auto err =
      run_stream(ApiKind::anthropic_messages,
                 "event: error\ndata: "
                 "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n");
  EXPECT_TRUE(err.error);
  EXPECT_FALSE(err.usage);
}

TEST(UsageTest, ResponsesStream) {
  const std::string stream =
      "event: response.created\ndata: "
      "{\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"usage\":null}}\n\n"
      "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"item\":{}}\n\n"
      "event: response.output_text.delta\ndata: "
      "{\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n"
      "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"text\":\"Hi\"}\n\n"
      "event: response.completed\ndata: "
      "{\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"usage\":"
      "{\"input_tokens\":700,\"input_tokens_details\":{\"cached_tokens\":640},\"output_tokens\":5}}}\n\n";
  auto run = run_stream(ApiKind::openai_responses, stream);
  EXPECT_EQ(run.first_content, 2);
  ASSERT_TRUE(run.usage);
  EXPECT_EQ(*run.usage, (Usage{700, 640, 5}));
  // The event type may come from the SSE event name alone.
  EXPECT_TRUE(
      inspect_stream_event(ApiKind::openai_responses, "response.output_text.delta", R"({"delta":"x"})")
          .content);
  EXPECT_TRUE(
      inspect_stream_event(ApiKind::openai_responses, "", R"({"type":"response.failed","response":{}})")
          .error);
}

TEST(UsageTest, FastTrackerSkipsParsingAfterContentButKeepsUsage) {
  StreamUsageTracker full(ApiKind::openai_chat);
  EXPECT_TRUE(full.on_event("", R"({"choices":[{"delta":{"content":"a"}}]})").content);
  EXPECT_TRUE(full.on_event("", R"({"choices":[{"delta":{"content":"b"}}]})").content);
  StreamUsageTracker t(ApiKind::openai_chat, StreamUsageTracker::Mode::fast);
  EXPECT_TRUE(t.on_event("", R"({"choices":[{"delta":{"content":"a"}}]})").content);
  // After content, a plain chunk is not parsed (cheap path) and says so.
  auto skipped = t.on_event("", R"({"choices":[{"delta":{"content":"b"}}]})");
  EXPECT_TRUE(skipped.skipped);
  EXPECT_FALSE(skipped.json_ok);
  EXPECT_FALSE(skipped.usage_only);
  auto u = t.on_event("", R"({"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}})");
  EXPECT_TRUE(u.usage_only);
  EXPECT_EQ(t.usage(), (Usage{1, std::nullopt, 2}));
  EXPECT_FALSE(StreamUsageTracker(ApiKind::openai_chat).usage());
}

TEST(UsageTest, ABodySaysWhetherTheReplyEndedWithTextOrToolCalls) {
  const auto end_of = [](ApiKind api, std::string_view body) { return parse_usage_body(api, body)->end; };
  const std::string anthropic_usage = R"("usage":{"input_tokens":5,"output_tokens":1})";
  EXPECT_EQ(end_of(ApiKind::anthropic_messages, R"({"stop_reason":"tool_use",)" + anthropic_usage + "}"),
            ReplyEnd::tool_calls);
  EXPECT_EQ(end_of(ApiKind::anthropic_messages, R"({"stop_reason":"end_turn",)" + anthropic_usage + "}"),
            ReplyEnd::text);
  EXPECT_EQ(end_of(ApiKind::anthropic_messages, "{" + anthropic_usage + "}"), std::nullopt);
  const std::string chat_usage = R"("usage":{"prompt_tokens":5,"completion_tokens":1})";
  EXPECT_EQ(
      end_of(ApiKind::openai_chat, R"({"choices":[{"finish_reason":"tool_calls"}],)" + chat_usage + "}"),
      ReplyEnd::tool_calls);
  EXPECT_EQ(end_of(ApiKind::openai_chat, R"({"choices":[{"finish_reason":"length"}],)" + chat_usage + "}"),
            ReplyEnd::text);
  EXPECT_EQ(end_of(ApiKind::openai_chat, R"({"choices":[{"finish_reason":null}],)" + chat_usage + "}"),
            std::nullopt);
  const std::string responses_usage = R"("usage":{"input_tokens":5,"output_tokens":1})";
  EXPECT_EQ(end_of(ApiKind::openai_responses,
                   R"({"output":[{"type":"message"},{"type":"function_call"}],)" + responses_usage + "}"),
            ReplyEnd::tool_calls);
  EXPECT_EQ(end_of(ApiKind::openai_responses, R"({"output":[{"type":"message"}],)" + responses_usage + "}"),
            ReplyEnd::text);
}

TEST(UsageTest, AStreamSaysWhetherTheReplyEndedWithTextOrToolCallsEvenWhenParsedFast) {
  const auto end_of = [](ApiKind api, std::vector<std::string_view> events) {
    StreamUsageTracker t(api, StreamUsageTracker::Mode::fast);
    for (const std::string_view e : events) {
      t.on_event("", e);
    }
    return t.usage() ? t.usage()->end : std::nullopt;
  };
  // OpenAI chat: the finish chunk carries no usage, and comes after content (the fast path must parse it).
  const std::string_view content =
      R"({"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]})";
  const std::string_view usage = R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}})";
  EXPECT_EQ(end_of(ApiKind::openai_chat,
                   {content, R"({"choices":[{"index":0,"delta":{},"finish_reason": "tool_calls"}]})", usage}),
            ReplyEnd::tool_calls);
  EXPECT_EQ(
      end_of(ApiKind::openai_chat, {content, R"({"choices":[{"delta":{},"finish_reason":"stop"}]})", usage}),
      ReplyEnd::text);
  EXPECT_EQ(end_of(ApiKind::openai_chat, {content, content, usage}), std::nullopt);
  EXPECT_EQ(
      end_of(ApiKind::anthropic_messages,
             {R"({"type":"message_start","message":{"usage":{"input_tokens":5}}})",
              R"({"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{}"}})",
              R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}})"}),
      ReplyEnd::tool_calls);
  EXPECT_EQ(end_of(ApiKind::openai_responses,
                   {R"({"type":"response.output_text.delta","delta":"hi"})",
                    R"({"type":"response.completed","response":{"output":[{"type":"message"}],)"
                    R"("usage":{"input_tokens":5,"output_tokens":1}}})"}),
            ReplyEnd::text);
}

}  // namespace
}  // namespace warden::protocol
