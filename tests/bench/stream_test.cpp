// The bench's pure parts: reading a streamed response, metrics folding.
#include <gtest/gtest.h>

#include "bench/metrics.hpp"
#include "bench/stream.hpp"

namespace warden::bench {
namespace {

const std::string kAnthropicStream =
    "event: message_start\n"
    "data: "
    "{\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"usage\":{\"input_"
    "tokens\":"
    "100,\"output_tokens\":0}}}\n\n"
    "event: content_block_start\n"
    "data: "
    "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: content_block_delta\n"
    "data: "
    "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}"
    "\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" "
    "world\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: message_delta\n"
    "data: "
    "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":2}}"
    "\n\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n\n"
    "data: [DONE]\n\n";

const std::string kOpenAiStream =
    "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
    "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
    "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"}}]}\n\n"
    "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n"
    "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":7}}\n\n"
    "data: [DONE]\n\n";

// Feeds the stream in pieces of `step` bytes; returns the byte offset at which the first content arrived.
std::size_t feed_in_pieces(StreamReader& r, const std::string& stream, std::size_t step) {
  std::size_t first = std::string::npos;
  for (std::size_t i = 0; i < stream.size(); i += step) {
    if (r.feed(std::string_view(stream).substr(i, step)) && first == std::string::npos) {
      first = i;
    }
  }
  return first;
}

TEST(StreamReader, AnthropicReplyTokensAndFirstContentAtAnySplit) {
  const std::size_t first_delta = kAnthropicStream.find("content_block_delta");
  for (std::size_t step : {1U, 7U, 64U, 4096U}) {
    StreamReader r(protocol::ApiKind::anthropic_messages);
    const std::size_t first = feed_in_pieces(r, kAnthropicStream, step);
    ASSERT_NE(first, std::string::npos);
    // The first content is reported with the piece that completes the first delta event, not earlier.
    EXPECT_GT(first + step, first_delta);
    EXPECT_TRUE(r.finish());
    EXPECT_EQ(r.reply(), "Hello world");
    EXPECT_EQ(r.output_tokens(), 2);
  }
}

TEST(StreamReader, OpenAiReplyAndUsage) {
  StreamReader r(protocol::ApiKind::openai_chat);
  feed_in_pieces(r, kOpenAiStream, 5);
  EXPECT_TRUE(r.finish());
  EXPECT_EQ(r.reply(), "Hi there");
  EXPECT_EQ(r.output_tokens(), 7);  // the engine's usage wins over the count of content events
}

TEST(StreamReader, WithoutUsageCountsContentEvents) {
  StreamReader r(protocol::ApiKind::openai_chat);
  std::string stream = kOpenAiStream;
  stream.erase(stream.find("data: {\"id\":\"c\",\"choices\":[],"),
               stream.find("data: [DONE]") - stream.find("data: {\"id\":\"c\",\"choices\":[],"));
  r.feed(stream);
  EXPECT_TRUE(r.finish());
  EXPECT_EQ(r.output_tokens(), 2);
}

TEST(StreamReader, TruncatedOrErrorStreamsAreFailures) {
  StreamReader cut(protocol::ApiKind::anthropic_messages);
  cut.feed(kAnthropicStream.substr(0, kAnthropicStream.find("event: message_delta")));
  EXPECT_TRUE(cut.saw_content());
  EXPECT_FALSE(cut.finish());
  EXPECT_FALSE(cut.error_text().empty());

  StreamReader err(protocol::ApiKind::anthropic_messages);
  err.feed(
      "event: error\ndata: "
      "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n"
      "data: [DONE]\n\n");
  EXPECT_FALSE(err.finish());
  EXPECT_NE(err.error_text().find("overloaded"), std::string::npos);

  StreamReader garbage(protocol::ApiKind::openai_chat);
  garbage.feed("data: {not json\n\ndata: [DONE]\n\n");
  EXPECT_FALSE(garbage.saw_content());
  EXPECT_EQ(garbage.reply(), "");
}

TEST(BenchMetrics, BusyRanksAndPrefixSumsOverEveryEndpoint) {
  const std::string dp2 =
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 0.0\n"
      "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 1000\n"
      "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 600\n"
      "vllm:prefix_cache_queries_total{engine=\"1\",model_name=\"m\"} 500\n"
      "vllm:prefix_cache_hits_total{engine=\"1\",model_name=\"m\"} 100\n";
  // With CPU KV offload: 3 more tokens loaded from host memory, hits too.
  const std::string single =
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\n"
      "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 10\n"
      "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 5\n"
      "vllm:external_prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 3\n";
  const MetricsSample s =
      summarize({*protocol::parse_vllm_metrics(dp2), *protocol::parse_vllm_metrics(single)});
  EXPECT_EQ(s.ranks, 3);
  EXPECT_EQ(s.busy_ranks, 2);
  ASSERT_TRUE(s.prefix.has_value());
  EXPECT_DOUBLE_EQ(s.prefix->queries, 1510);
  EXPECT_DOUBLE_EQ(s.prefix->hits, 708);

  // A rank without prefix counters makes the level's hit rate unmeasurable rather than wrong.
  const MetricsSample partial =
      summarize({*protocol::parse_vllm_metrics("vllm:num_requests_running{engine=\"0\"} 0\n")});
  EXPECT_EQ(partial.ranks, 1);
  EXPECT_EQ(partial.busy_ranks, 0);
  EXPECT_FALSE(partial.prefix.has_value());
  EXPECT_EQ(summarize({}).ranks, 0);
}

}  // namespace
}  // namespace warden::bench
