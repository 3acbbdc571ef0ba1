// The reply formats of a tool-call answer (sim/formats.hpp), token by token: each API's stream carries
// exactly the calls' arguments, and a reply cut by max_tokens ends mid-arguments with the capped finish.

#include "sim/formats.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace warden::sim {
namespace {

namespace json = boost::json;

engine::ToolReply two_reads() {
  return engine::make_tool_reply({{"0123456789abcdef01234567", "Read", R"({"file_path":"/w/notes.txt"})"},
                                  {"0123456789abcdef01234568", "Read", R"({"file_path":"/w/main.py"})"}});
}

// The JSON payloads of an SSE text, in order.
std::vector<json::value> events(const std::string& sse) {
  std::vector<json::value> out;
  for (std::size_t at = sse.find("data: "); at != std::string::npos; at = sse.find("data: ", at + 1)) {
    const std::string line = sse.substr(at + 6, sse.find('\n', at) - at - 6);
    if (line != "[DONE]") {
      out.push_back(json::parse(line));
    }
  }
  return out;
}

// The whole stream of `tokens` tokens of `reply` (fewer than its length = cut by max_tokens).
std::string stream(Api api, const engine::ToolReply& reply, std::uint32_t tokens) {
  StreamEncoder encoder(api, ReplyMeta{"msg_1", "m", 0, true}, reply);
  UsageOut usage{100, 0, 0, tokens < reply.tokens.size()};
  std::string out = encoder.start(usage);
  for (std::uint32_t i = 0; i < tokens; ++i) {
    usage.completion_tokens = i + 1;
    out += encoder.token("", i + 1 == tokens, usage);
  }
  return out + encoder.finish(usage);
}

TEST(ToolFormats, MessagesStreamEachCallAsToolUseWithItsWholeArguments) {
  const auto reply = two_reads();
  std::vector<std::string> args(2);
  std::vector<std::string> types;
  std::string stop;
  for (const auto& ev :
       events(stream(Api::messages, reply, static_cast<std::uint32_t>(reply.tokens.size())))) {
    const auto& o = ev.as_object();
    types.emplace_back(o.at("type").as_string());
    if (types.back() == "content_block_start") {
      EXPECT_EQ(o.at("content_block").at("type").as_string(), "tool_use");
    } else if (types.back() == "content_block_delta") {
      EXPECT_EQ(o.at("delta").at("type").as_string(), "input_json_delta");
      args.at(o.at("index").as_int64()) += o.at("delta").at("partial_json").as_string();
    } else if (types.back() == "message_delta") {
      stop = o.at("delta").at("stop_reason").as_string();
    }
  }
  EXPECT_EQ(args[0], reply.calls[0].arguments);
  EXPECT_EQ(args[1], reply.calls[1].arguments);
  EXPECT_EQ(stop, "tool_use");
  EXPECT_EQ(std::count(types.begin(), types.end(), "content_block_start"), 2);
  EXPECT_EQ(std::count(types.begin(), types.end(), "content_block_stop"), 2);
  EXPECT_EQ(types.back(), "message_stop");
}

TEST(ToolFormats, ChatAndResponsesStreamsCarryTheArgumentsAndTheirFinish) {
  const auto reply = two_reads();
  const auto n = static_cast<std::uint32_t>(reply.tokens.size());
  std::vector<std::string> chat(2);
  std::string finish;
  for (const auto& ev : events(stream(Api::chat, reply, n))) {
    for (const auto& c : ev.at("choices").as_array()) {
      if (!c.at("finish_reason").is_null()) {
        finish = c.at("finish_reason").as_string();
      }
      if (const auto* calls = c.at("delta").as_object().if_contains("tool_calls")) {
        for (const auto& d : calls->as_array()) {
          chat.at(d.at("index").as_int64()) += d.at("function").at("arguments").as_string();
        }
      }
    }
  }
  EXPECT_EQ(chat[1], reply.calls[1].arguments);
  EXPECT_EQ(finish, "tool_calls");

  const auto responses = events(stream(Api::responses, reply, n));
  const auto& done = responses.back().as_object();
  EXPECT_EQ(done.at("type").as_string(), "response.completed");
  const auto& output = done.at("response").at("output").as_array();
  ASSERT_EQ(output.size(), 2U);
  EXPECT_EQ(output[0].at("type").as_string(), "function_call");
  EXPECT_EQ(output[0].at("call_id").as_string(), "call_0123456789abcdef01234567");
  EXPECT_EQ(output[1].at("arguments").as_string(), reply.calls[1].arguments);
}

TEST(ToolFormats, ACappedReplyEndsMidArgumentsWithTheCappedFinish) {
  const auto reply = two_reads();
  const std::uint32_t cut = reply.ends[0] - 2;  // inside the first call
  const auto body = json::parse(
      full_body(Api::messages, ReplyMeta{"msg_1", "m", 0, false}, "", UsageOut{100, 0, cut, true}, reply));
  EXPECT_EQ(body.at("stop_reason").as_string(), "max_tokens");
  ASSERT_EQ(body.at("content").as_array().size(), 1U);
  EXPECT_EQ(body.at("content").at(0).at("input"), json::object{});  // cut arguments: no object yet
  std::string streamed;
  for (const auto& ev : events(stream(Api::messages, reply, cut))) {
    if (ev.at("type").as_string() == "content_block_delta") {
      streamed += ev.at("delta").at("partial_json").as_string();
    }
  }
  EXPECT_FALSE(streamed.empty());
  EXPECT_LT(streamed.size(), reply.calls[0].arguments.size());
  EXPECT_TRUE(reply.calls[0].arguments.starts_with(streamed));
  // Chat: the whole body holds the first call's arguments as far as they came, finish "length".
  const auto chat = json::parse(
      full_body(Api::chat, ReplyMeta{"chatcmpl-1", "m", 0, false}, "", UsageOut{100, 0, cut, true}, reply));
  EXPECT_EQ(chat.at("choices").at(0).at("finish_reason").as_string(), "length");
  EXPECT_EQ(chat.at("choices")
                .at(0)
                .at("message")
                .at("tool_calls")
                .at(0)
                .at("function")
                .at("arguments")
                .as_string(),
            streamed);
}

}  // namespace
}  // namespace warden::sim
