// `lm-warden sim` honours vLLM's ignore_eos and min_tokens (the fields `vllm bench serve` sends for fixed
// reply lengths), and refuses bad values as vLLM does. Every reply is drawn at exactly 5 tokens
// (--reply-median 5 --reply-sigma 0).

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

json::object chat(int max_tokens) {
  return {{"model", kModel},
          {"messages", json::array{json::object{{"role", "user"}, {"content", "Say something"}}}},
          {"max_tokens", max_tokens}};
}

struct Reply {
  unsigned status = 0;
  std::string reason;
  std::int64_t tokens = 0;
  json::value body;
};

Reply post(int port, const std::string& path, const json::object& o) {
  Client c(port);
  const auto r = c.post(path, json::serialize(o));
  Reply out{r.status, "", 0, json::parse(r.body)};
  if (r.status != 200) {
    return out;
  }
  if (path == "/v1/messages") {
    out.reason = out.body.at("stop_reason").as_string();
    out.tokens = out.body.at("usage").at("output_tokens").as_int64();
  } else {
    out.reason = out.body.at("choices").at(0).at("finish_reason").as_string();
    out.tokens = out.body.at("usage").at("completion_tokens").as_int64();
  }
  return out;
}

class SimLength : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sim_ = new ChildProcess(sim_test::sim_args(
        {"--preset", "instant", "--max-model-len", "4096", "--reply-median", "5", "--reply-sigma", "0"}));
    port_ = sim_->wait_for_port();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(sim_->stop(), 0);
    delete sim_;
  }
  static ChildProcess* sim_;
  static int port_;
};
ChildProcess* SimLength::sim_ = nullptr;
int SimLength::port_ = 0;

TEST_F(SimLength, IgnoreEosRunsTheReplyToMaxTokens) {
  EXPECT_EQ(post(port_, "/v1/chat/completions", chat(20)).tokens, 5);  // ends by itself
  json::object o = chat(20);
  o["ignore_eos"] = true;
  const Reply r = post(port_, "/v1/chat/completions", o);
  EXPECT_EQ(r.reason, "length");
  EXPECT_EQ(r.tokens, 20);
  o["ignore_eos"] = "true";  // pydantic's lax boolean, as vLLM reads it
  EXPECT_EQ(post(port_, "/v1/chat/completions", o).tokens, 20);
  o["ignore_eos"] = false;
  EXPECT_EQ(post(port_, "/v1/chat/completions", o).tokens, 5);

  json::object completion{
      {"model", kModel}, {"prompt", "Once upon a time"}, {"max_tokens", 17}, {"ignore_eos", 1}};
  EXPECT_EQ(post(port_, "/v1/completions", completion).tokens, 17);
  json::object message = chat(9);
  message["ignore_eos"] = true;
  const Reply m = post(port_, "/v1/messages", message);
  EXPECT_EQ(m.reason, "max_tokens");
  EXPECT_EQ(m.tokens, 9);
}

TEST_F(SimLength, MinTokensIsAFloorOnTheDrawnLength) {
  json::object o = chat(20);
  o["min_tokens"] = 12;
  Reply r = post(port_, "/v1/chat/completions", o);
  EXPECT_EQ(r.reason, "stop");
  EXPECT_EQ(r.tokens, 12);
  o["min_tokens"] = 3;  // below the drawn 5: no effect
  EXPECT_EQ(post(port_, "/v1/chat/completions", o).tokens, 5);
  o["min_tokens"] = 20;  // the floor is the cap: the cap ends it
  r = post(port_, "/v1/chat/completions", o);
  EXPECT_EQ(r.reason, "length");
  EXPECT_EQ(r.tokens, 20);
}

TEST_F(SimLength, BadValuesAreRefusedInVllmsFormat) {
  struct Case {
    const char* field;
    json::value value;
    const char* message;  // a part of vLLM's message
  };
  const Case cases[] = {
      {"min_tokens", 30, "min_tokens must be less than or equal to max_tokens=20, got 30."},
      {"min_tokens", -1, "min_tokens must be greater than or equal to 0, got -1."},
      {"min_tokens", 2.5, "valid integer"},
      {"min_tokens", nullptr, "valid integer"},
      {"ignore_eos", "maybe", "valid boolean"},
      {"ignore_eos", 2, "valid boolean"},
      {"ignore_eos", nullptr, "valid boolean"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.field) + " = " + json::serialize(c.value));
    json::object o = chat(20);
    o[c.field] = c.value;
    const Reply r = post(port_, "/v1/chat/completions", o);
    EXPECT_EQ(r.status, 400u);
    const json::object& error = r.body.at("error").as_object();
    EXPECT_NE(std::string(error.at("message").as_string()).find(c.message), std::string::npos)
        << json::serialize(r.body);
    EXPECT_EQ(error.at("type").as_string(), "BadRequestError");
    EXPECT_EQ(error.at("code").as_int64(), 400);
  }
}

}  // namespace
