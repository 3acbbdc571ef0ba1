// The reply-length model: replies end by themselves at a length drawn from the prompt, capped by
// max_tokens and the context.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "engine/engine.hpp"
#include "engine/presets.hpp"
#include "engine/run_one.hpp"

#include "engine/config_check.hpp"
#include "engine/seq.hpp"

namespace warden::engine {
namespace {

using test::seq;

EngineConfig fast(ReplyLength reply, std::uint32_t max_model_len = 100000) {
  EngineConfig c = *find_preset("instant");
  c.max_model_len = max_model_len;
  c.reply = reply;
  return c;
}

// Runs one request alone and returns its final usage.
Usage run_one(Engine& engine, RequestId id, Tokens prompt, int max_tokens) {
  RequestSpec spec;
  spec.id = id;
  spec.prompt = std::move(prompt);
  spec.max_tokens = max_tokens;
  EXPECT_TRUE(engine.add_request(std::move(spec)));
  double now = 0;
  Usage usage;
  std::uint32_t emitted = 0;
  while (engine.has_work()) {
    const StepResult r = engine.step(now);
    now += r.duration;
    for (const Event& e : r.events) {
      if (e.kind == Event::Kind::token && e.request == id) {
        ++emitted;
        if (e.finished) {
          usage = e.usage;
        }
      }
    }
  }
  EXPECT_EQ(emitted, usage.completion_tokens);
  return usage;
}

TEST(ReplyLength, OffMeansZeroAndEveryReplyRunsToItsCap) {
  EXPECT_EQ(draw_reply_length(ReplyLength{}, 12345), 0U);
  Engine engine(fast(ReplyLength{}), 7);
  const Usage u = run_one(engine, 1, seq(1000, 40), 300);
  EXPECT_EQ(u.completion_tokens, 300U);
  EXPECT_EQ(u.finish_reason, FinishReason::length);
}

TEST(ReplyLength, SameSeedSameLengthAndAtLeastOne) {
  const ReplyLength model{250, 1.0};
  for (std::uint64_t s = 0; s < 1000; ++s) {
    const std::uint32_t n = draw_reply_length(model, s);
    EXPECT_GE(n, 1U);
    EXPECT_EQ(n, draw_reply_length(model, s));
  }
  EXPECT_EQ(draw_reply_length(ReplyLength{40, 0}, 99), 40U);  // no spread: exactly the median
}

TEST(ReplyLength, SamePromptSameLengthOnEveryEngineOfTheSameSeed) {
  const EngineConfig c = fast(ReplyLength{250, 1.0});
  Engine a(c, 3);
  Engine b(c, 3);
  for (TokenId start = 1000; start < 1020; ++start) {
    const Usage ua = run_one(a, start, seq(start, 64), 100000 - 64);
    const Usage ub = run_one(b, start + 1, seq(start, 64), 100000 - 64);  // another id, same prompt
    EXPECT_EQ(ua.completion_tokens, ub.completion_tokens);
    EXPECT_EQ(ua.finish_reason, FinishReason::stop);
  }
}

TEST(ReplyLength, MedianOverManyPromptsIsRoughlyTheConfiguredOne) {
  const ReplyLength model{250, 1.0};
  Engine engine(fast(model), 11);
  std::vector<std::uint32_t> lengths;
  for (TokenId i = 0; i < 400; ++i) {
    lengths.push_back(run_one(engine, i + 1, seq(2000 + (i * 37), 32), 100000 - 32).completion_tokens);
  }
  std::sort(lengths.begin(), lengths.end());
  const double median = lengths[lengths.size() / 2];
  EXPECT_GT(median, 250 * 0.85);
  EXPECT_LT(median, 250 / 0.85);
  // The spread: about 16% of log-normal draws lie below median / e.
  const auto below = std::count_if(lengths.begin(), lengths.end(), [](std::uint32_t n) { return n < 92; });
  EXPECT_GT(below, 400 * 0.10);
  EXPECT_LT(below, 400 * 0.22);
}

TEST(ReplyLength, CappedByMaxTokensSaysLength) {
  Engine engine(fast(ReplyLength{250, 0}), 5);  // every draw is 250
  const Usage capped = run_one(engine, 1, seq(1000, 20), 100);
  EXPECT_EQ(capped.completion_tokens, 100U);
  EXPECT_EQ(capped.finish_reason, FinishReason::length);
  // A draw equal to the cap is the cap's doing: vLLM checks the length before EOS.
  const Usage equal = run_one(engine, 2, seq(1000, 20), 250);
  EXPECT_EQ(equal.completion_tokens, 250U);
  EXPECT_EQ(equal.finish_reason, FinishReason::length);
  const Usage free = run_one(engine, 3, seq(1000, 20), 251);
  EXPECT_EQ(free.completion_tokens, 250U);
  EXPECT_EQ(free.finish_reason, FinishReason::stop);
}

TEST(ReplyLength, CappedByTheContext) {
  Engine engine(fast(ReplyLength{250, 0}, 1000), 5);
  const Usage u = run_one(engine, 1, seq(1000, 900), 5000);  // room for 100 tokens only
  EXPECT_EQ(u.completion_tokens, 100U);
  EXPECT_EQ(u.finish_reason, FinishReason::length);
  EXPECT_EQ(finish_reason_name(FinishReason::stop), "stop");
}

TEST(ReplyLength, PresetsCarryAgentRepliesAndTheKeysRoundTrip) {
  const EngineConfig a = *find_preset("a4000-qwen3-4b");
  EXPECT_EQ(a.reply.median, 250);
  EXPECT_EQ(a.reply.sigma, 1.0);
  EXPECT_EQ(find_preset("h200-qwen3-4b")->reply.median, 250);
  EXPECT_EQ(find_preset("instant")->reply.median, 0);  // functional tests: replies of exactly max_tokens
  EngineConfig c = a;
  ASSERT_TRUE(set_param(c, "reply-median", "0"));
  ASSERT_TRUE(set_param(c, "reply_sigma", "0.5"));
  EXPECT_EQ(c.reply.median, 0);
  const auto back = parse_preset_yaml(to_yaml(c), EngineConfig{});
  ASSERT_TRUE(back);
  EXPECT_EQ(back->reply.median, 0);
  EXPECT_EQ(back->reply.sigma, 0.5);
  c.reply.sigma = -1;
  EXPECT_FALSE(validate(c));
}

// vLLM's ignore_eos runs a reply to its cap; min_tokens is a floor on the drawn length.
TEST(ReplyLength, IgnoreEosAndMinTokens) {
  const EngineConfig c = fast({5, 0});  // every reply ends by itself after 5 tokens
  RequestSpec plain;
  plain.id = 1;
  plain.prompt = seq(1, 10);
  plain.max_tokens = 20;
  EXPECT_EQ(test::run_one(c, 1, plain).usage.completion_tokens, 5U);
  RequestSpec ignore = plain;
  ignore.ignore_eos = true;
  const auto capped = test::run_one(c, 1, ignore);
  EXPECT_EQ(capped.usage.completion_tokens, 20U);
  EXPECT_EQ(capped.usage.finish_reason, FinishReason::length);
  RequestSpec floor = plain;
  floor.min_tokens = 12;
  const auto floored = test::run_one(c, 1, floor);
  EXPECT_EQ(floored.usage.completion_tokens, 12U);
  EXPECT_EQ(floored.usage.finish_reason, FinishReason::stop);
  floor.min_tokens = 3;  // below the drawn 5: no effect
  EXPECT_EQ(test::run_one(c, 1, floor).usage.completion_tokens, 5U);
  // A fixed reply (a tool call) is extended past its tokens by generated ones.
  RequestSpec fixed = plain;
  fixed.reply = seq(500, 4);
  fixed.min_tokens = 7;
  const auto extended = test::run_one(c, 1, fixed);
  ASSERT_EQ(extended.tokens.size(), 7U);
  EXPECT_EQ(Tokens(extended.tokens.begin(), extended.tokens.begin() + 4), seq(500, 4));
}

}  // namespace
}  // namespace warden::engine
