// Property tests over random and mutated inputs (deterministic PRNG): the codecs never crash, and request
// inspection agrees with a full Boost.JSON DOM parse on every input.

#include "base/splitmix.hpp"
#include "protocol/error_body.hpp"
#include "protocol/request.hpp"
#include "protocol/rewrite.hpp"
#include "protocol/samples.hpp"
#include "protocol/usage.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace warden::protocol {
namespace {

namespace json = boost::json;

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed * base::kSplitMixGamma + 0xD1B54A32D192ED03ull) {}
  std::uint64_t next() { return s_.next(); }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }

 private:
  base::SplitMix64 s_;
};

// A random JSON value, sometimes deep, with keys that matter to the inspector.
json::value random_value(Rng& rng, int depth) {
  static const char* keys[] = {"model",      "stream", "stream_options", "include_usage",
                               "messages",   "role",   "user",           "content",
                               "system",     "tools",  "cache_control",  "metadata",
                               "user_id",    "prompt", "input",          "prompt_cache_key",
                               "max_tokens", "x"};
  switch (depth > 6 ? rng.below(5) : rng.below(7)) {
    case 0:
      return nullptr;
    case 1:
      return rng.below(2) == 0;
    case 2:
      return static_cast<std::int64_t>(rng.next() % 100000) - 50000;
    case 3:
      return static_cast<double>(rng.next() % 1000) / 7.0;
    case 4:
      return json::string(samples::filler(rng.below(40), rng.next()));
    case 5: {
      json::array a;
      for (std::size_t i = 0, n = rng.below(5); i < n; ++i) {
        a.push_back(random_value(rng, depth + 1));
      }
      return a;
    }
    default: {
      json::object o;
      for (std::size_t i = 0, n = rng.below(5); i < n; ++i) {
        o[keys[rng.below(std::size(keys))]] = random_value(rng, depth + 1);
      }
      return o;
    }
  }
}

std::string seed_body(Rng& rng) {
  switch (rng.below(5)) {
    case 0: {
      samples::ClaudeOptions o;
      o.system_bytes = 300;
      o.tool_bytes = 50;
      o.first_user_bytes = 200;
      o.turn_bytes = 100;
      o.turns = 1 + static_cast<int>(rng.below(3));
      o.metadata = static_cast<samples::ClaudeMetadata>(rng.below(3));
      return samples::claude_code_body(o);
    }
    case 1:
      return samples::codex_body("k" + std::to_string(rng.below(100)), 1 + static_cast<int>(rng.below(2)));
    case 2:
      return samples::openai_chat_body(1 + static_cast<int>(rng.below(4)), rng.next() % 1000);
    default: {
      json::object o;
      for (int i = 0; i < 4; ++i) {
        json::value v = random_value(rng, 1);
        if (v.is_object()) {
          for (auto& kv : v.as_object()) {
            o[kv.key()] = kv.value();
          }
        }
      }
      if (rng.below(4) != 0) {
        o["model"] = "m" + std::to_string(rng.below(10));
      }
      return json::serialize(o);
    }
  }
}

std::string mutate(Rng& rng, std::string s) {
  static constexpr char chars[] =
      "{}[]\",:\\ \n0123456789.eE-+truefalsnul\x00\x7f\xc3\xa9\xff\xed\xa0u/dD8cC";
  static const std::string alphabet(chars, sizeof chars - 1);  // keeps the NUL byte
  const std::size_t ops = 1 + rng.below(3);
  for (std::size_t k = 0; k < ops && !s.empty(); ++k) {
    const std::size_t pos = rng.below(s.size());
    switch (rng.below(5)) {
      case 0:
        s.resize(pos);  // truncate
        break;
      case 1:
        s[pos] = alphabet[rng.below(alphabet.size())];
        break;
      case 2:
        s.insert(pos, 1, alphabet[rng.below(alphabet.size())]);
        break;
      case 3:
        s.erase(pos, 1 + rng.below(20));
        break;
      default: {
        const std::size_t len = std::min<std::size_t>(1 + rng.below(30), s.size() - pos);
        s.insert(rng.below(s.size()), s.substr(pos, len));
        break;
      }
    }
  }
  return s;
}

// What inspect_request must say, computed from a DOM parse.
void check_against_dom(const std::string& body, std::uint64_t& ok_count, std::uint64_t& err_count) {
  auto r = inspect_request(ApiKind::openai_chat, HeaderLookup{}, body);
  boost::system::error_code ec;
  json::parse_options opt;
  opt.max_depth = InspectOptions{}.max_depth;
  const json::value dom = json::parse(body, ec, {}, opt);
  if (ec) {
    ASSERT_FALSE(r) << body;
    const auto e = static_cast<Errc>(r.error().value());
    // The inspector stops at a non-object top level before it sees the syntax error further on.
    EXPECT_TRUE(e == Errc::malformed_json || e == Errc::body_not_object || e == Errc::too_deep) << body;
    ++err_count;
    return;
  }
  if (!dom.is_object()) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), Errc::body_not_object);
    ++err_count;
    return;
  }
  const json::object& o = dom.get_object();
  const json::value* model = o.if_contains("model");
  if (model == nullptr || (model->is_string() && model->get_string().empty())) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), Errc::missing_model) << body;
    ++err_count;
    return;
  }
  if (!model->is_string()) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), Errc::model_not_string) << body;
    ++err_count;
    return;
  }
  ASSERT_TRUE(r) << body;
  ++ok_count;
  EXPECT_EQ(r->model, model->get_string());
  const json::value* stream = o.if_contains("stream");
  const bool streaming = stream != nullptr && stream->is_bool() && stream->get_bool();
  EXPECT_EQ(r->stream, streaming);
  EXPECT_EQ(r->session_source == SessionSource::none, r->session_key.empty());

  // Rewrite: the result parses, the model is replaced, and nothing else changes (bar stream_options).
  auto rw = rewrite_request(ApiKind::openai_chat, body, RewriteOptions{"served", true});
  ASSERT_TRUE(rw) << body;
  const std::string rewritten = rw->joined(body);
  // The gateway's path (the layout inspect_request found) gives the same bytes.
  EXPECT_EQ(
      rewrite_request(ApiKind::openai_chat, body, r->layout, RewriteOptions{"served", true}).joined(body),
      rewritten);
  const json::value after = json::parse(rewritten, ec, {}, opt);
  ASSERT_FALSE(ec) << rewritten;
  json::object expected = o;
  expected["model"] = "served";
  json::object got = after.as_object();
  if (streaming) {
    const json::value& so = got.at("stream_options");
    ASSERT_TRUE(so.is_object());
    EXPECT_EQ(so.at("include_usage"), true);
    got.erase("stream_options");
    expected.erase("stream_options");
  }
  EXPECT_EQ(got, expected) << body;
}

TEST(FuzzTest, MutatedAndRandomBodiesAgreeWithDomParse) {
  Rng rng(20261129);
  std::uint64_t ok = 0;
  std::uint64_t err = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string body = seed_body(rng);
    if (rng.below(3) != 0) {
      body = mutate(rng, std::move(body));
    }
    check_against_dom(body, ok, err);
    if (HasFatalFailure()) {
      return;
    }
  }
  // Both outcomes must be exercised for the test to mean something.
  EXPECT_GT(ok, 500u);
  EXPECT_GT(err, 500u);
}

// Hand-picked edge cases of the JSON grammar, each checked against Boost.JSON's verdict.
TEST(FuzzTest, GrammarEdgeCasesAgreeWithDomParse) {
  const std::vector<std::string> values = {R"("\ud800")",
                                           R"("\udc00")",
                                           R"("\ud800\udc00")",
                                           R"("\ud800\u0041")",
                                           R"("\ud800x")",
                                           R"("\u00e9")",
                                           R"("\u00G9")",
                                           R"("\u12")",
                                           R"("\x")",
                                           R"("\/")",
                                           "\"\xc0\xaf\"",
                                           "\"\xed\xa0\x80\"",
                                           "\"\xf4\x90\x80\x80\"",
                                           "\"\xf0\x9f\x98\x80\"",
                                           "\"\xe2\x82\"",
                                           "\"\x7f\"",
                                           "\"\x1f\"",
                                           "\"tab\there\"",
                                           "01",
                                           "-",
                                           "-0",
                                           "1.",
                                           "1.5",
                                           "1e",
                                           "1e+",
                                           "1E5",
                                           "1e-7",
                                           "-1.5e+300",
                                           "1e400",
                                           "1e2147483647",
                                           "1e2147483648",
                                           "123456789012345678901234567890",
                                           "-9223372036854775808",
                                           "9223372036854775808",
                                           "tru",
                                           "true",
                                           "nul",
                                           "null",
                                           "falsey",
                                           "[1,]",
                                           "[,1]",
                                           "[]",
                                           "{}",
                                           R"({"a":1,})",
                                           R"({"a" 1})",
                                           R"({a:1})",
                                           "[1 2]",
                                           "\"unterminated",
                                           "[[[[]]]]"};
  std::uint64_t ok = 0;
  std::uint64_t err = 0;
  for (const std::string& v : values) {
    for (const std::string& body : {R"({"model":"m","x":)" + v + "}",
                                    R"({"model":"m","messages":[)" + v + "]}", R"({"model":)" + v + "}", v}) {
      check_against_dom(body, ok, err);
    }
  }
  EXPECT_GT(ok, 20u);
  EXPECT_GT(err, 20u);
}

TEST(FuzzTest, EveryTruncationOfARealBodyIsMalformed) {
  samples::ClaudeOptions o;
  o.system_bytes = 200;
  o.tool_bytes = 20;
  o.first_user_bytes = 100;
  const std::string body = samples::claude_code_body(o);
  for (std::size_t n = 0; n < body.size(); ++n) {
    auto r =
        inspect_request(ApiKind::anthropic_messages, HeaderLookup{}, std::string_view(body).substr(0, n));
    ASSERT_FALSE(r) << n;
    EXPECT_EQ(r.error(), Errc::malformed_json) << n;
    EXPECT_FALSE(rewrite_request(ApiKind::anthropic_messages, std::string_view(body).substr(0, n),
                                 RewriteOptions{"m", true}));
  }
  EXPECT_TRUE(inspect_request(ApiKind::anthropic_messages, HeaderLookup{}, body));
}

TEST(FuzzTest, RandomBytesEverywhere) {
  Rng rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string junk(rng.below(300), '\0');
    for (char& c : junk) {
      c = static_cast<char>(rng.next() & 0xFF);
    }
    if (rng.below(2) == 0 && !junk.empty()) {
      junk[0] = '{';
    }
    EXPECT_FALSE(inspect_request(ApiKind::openai_chat, HeaderLookup{}, junk) && junk[0] != '{');
    (void)rewrite_request(ApiKind::openai_chat, junk, RewriteOptions{"m", true});
    (void)parse_usage_body(ApiKind::anthropic_messages, junk);
    StreamUsageTracker t(static_cast<ApiKind>(rng.below(5)));
    (void)t.on_event("message_start", junk);
    (void)session_from_user_id(junk);
    // json_quote always yields valid JSON whatever the bytes.
    boost::system::error_code ec;
    const json::value v = json::parse(json_quote(junk), ec);
    ASSERT_FALSE(ec);
    EXPECT_TRUE(v.is_string());
  }
}

TEST(FuzzTest, MutatedStreamEventsNeverCrash) {
  Rng rng(99);
  const std::vector<std::pair<ApiKind, std::string>> seeds = {
      {ApiKind::openai_chat,
       R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":2}}})"},
      {ApiKind::anthropic_messages,
       R"({"type":"message_start","message":{"usage":{"input_tokens":3,"cache_read_input_tokens":2}}})"},
      {ApiKind::openai_responses,
       R"({"type":"response.completed","response":{"usage":{"input_tokens":1,"output_tokens":2}}})"}};
  for (int i = 0; i < 3000; ++i) {
    const auto& [api, seed] = seeds[rng.below(seeds.size())];
    const std::string data = mutate(rng, seed);
    auto info = inspect_stream_event(api, "", data);
    if (info.prompt_tokens) {
      EXPECT_GE(*info.prompt_tokens, 0);
    }
    // The relay's top-level look agrees with the full parse whenever both can tell (a look is no
    // validator: on broken JSON it may still answer).
    const auto seen = openai_usage_only(data);
    if (api == ApiKind::openai_chat && seen && info.json_ok) {
      EXPECT_EQ(*seen, info.usage_only) << data;
    }
    (void)parse_usage_body(api, data);
  }
}

}  // namespace
}  // namespace warden::protocol
