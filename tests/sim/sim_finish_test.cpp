// `lm-warden sim` with replies that end by themselves: the finish reason each API reports, whole and
// streamed. Every reply is drawn at exactly 5 tokens (--reply-median 5 --reply-sigma 0), so max_tokens 20
// ends by itself and max_tokens 3 is capped.

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <string>

#include "sim/sim_args.hpp"
#include "support/child_process.hpp"
#include "support/http.hpp"

namespace json = boost::json;
using test_support::ChildProcess;
using test_support::Client;

namespace {

using sim_test::kModel;

std::string body(const std::string& path, int max_tokens, bool stream) {
  json::object o{{"model", kModel}};
  if (path == "/v1/completions") {
    o["prompt"] = "Once upon a time";
    o["max_tokens"] = max_tokens;
  } else if (path == "/v1/responses") {
    o["input"] = "Say something";
    o["max_output_tokens"] = max_tokens;
  } else {
    o["messages"] = json::array{json::object{{"role", "user"}, {"content", "Say something"}}};
    o["max_tokens"] = max_tokens;
  }
  if (stream) {
    o["stream"] = true;
  }
  return json::serialize(o);
}

struct Finish {
  std::string reason;  // finish_reason, stop_reason or the Responses status
  std::int64_t tokens = 0;
  json::value details;  // Responses: incomplete_details
};

Finish whole(int port, const std::string& path, int max_tokens) {
  Client c(port);
  auto r = c.post(path, body(path, max_tokens, false));
  EXPECT_EQ(r.status, 200u) << r.body;
  const json::value v = json::parse(r.body);
  if (path == "/v1/messages") {
    return {std::string(v.at("stop_reason").as_string()), v.at("usage").at("output_tokens").as_int64(), {}};
  }
  if (path == "/v1/responses") {
    return {std::string(v.at("status").as_string()), v.at("usage").at("output_tokens").as_int64(),
            v.at("incomplete_details")};
  }
  return {std::string(v.at("choices").at(0).at("finish_reason").as_string()),
          v.at("usage").at("completion_tokens").as_int64(),
          {}};
}

Finish streamed(int port, const std::string& path, int max_tokens) {
  Client c(port);
  auto r = c.post(path, body(path, max_tokens, true));
  EXPECT_EQ(r.status, 200u) << r.body;
  Finish f;
  for (const auto& sse : test_support::parse_sse(r.body)) {
    if (sse.data == "[DONE]") {
      continue;
    }
    const json::value e = json::parse(sse.data);
    const json::object& o = e.as_object();
    if (path == "/v1/messages") {
      if (o.at("type") == "message_delta") {
        f.reason = o.at("delta").at("stop_reason").as_string();
        f.tokens = o.at("usage").at("output_tokens").as_int64();
      }
    } else if (path == "/v1/responses") {
      if (o.at("type") == "response.completed" || o.at("type") == "response.incomplete") {
        const json::value& resp = o.at("response");
        EXPECT_EQ(o.at("type").as_string(), "response." + std::string(resp.at("status").as_string()));
        f.reason = resp.at("status").as_string();
        f.tokens = resp.at("usage").at("output_tokens").as_int64();
        f.details = resp.at("incomplete_details");
      }
    } else {
      const json::object& choice = o.at("choices").at(0).as_object();
      const json::value& reason = choice.at("finish_reason");
      if (!(choice.contains("delta") && choice.at("delta").as_object().contains("role"))) {
        ++f.tokens;  // one chunk per token; chat's first chunk only carries the role
      }
      if (!reason.is_null()) {
        f.reason = reason.as_string();
      }
    }
  }
  return f;
}

}  // namespace

TEST(SimFinish, EveryApiSaysWhetherTheReplyEndedOrWasCapped) {
  ChildProcess sim(sim_test::sim_args(
      {"--preset", "instant", "--max-model-len", "4096", "--reply-median", "5", "--reply-sigma", "0"}));
  const int port = sim.wait_for_port();
  struct Case {
    std::string path;
    std::string ended;   // max_tokens 20: the reply ends by itself after 5 tokens
    std::string capped;  // max_tokens 3
  };
  const Case cases[] = {{"/v1/chat/completions", "stop", "length"},
                        {"/v1/completions", "stop", "length"},
                        {"/v1/messages", "end_turn", "max_tokens"},
                        {"/v1/responses", "completed", "incomplete"}};
  for (const Case& c : cases) {
    for (const bool stream : {false, true}) {
      SCOPED_TRACE(c.path + (stream ? " streamed" : " whole"));
      const Finish ended = stream ? streamed(port, c.path, 20) : whole(port, c.path, 20);
      EXPECT_EQ(ended.reason, c.ended);
      EXPECT_EQ(ended.tokens, 5);
      const Finish capped = stream ? streamed(port, c.path, 3) : whole(port, c.path, 3);
      EXPECT_EQ(capped.reason, c.capped);
      EXPECT_EQ(capped.tokens, 3);
      if (c.path == "/v1/responses") {
        EXPECT_TRUE(ended.details.is_null());
        ASSERT_TRUE(capped.details.is_object());
        EXPECT_EQ(capped.details.at("reason").as_string(), "max_output_tokens");
      }
    }
  }
  EXPECT_EQ(sim.stop(), 0);
}
