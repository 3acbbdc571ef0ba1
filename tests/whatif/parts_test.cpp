// The driver's parts: the incremental prompt renderer and the reference checks (vLLM's balancer model is
// tested in tests/core/vllm_balancer_test.cpp).
#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "engine/tokenizer.hpp"
#include "report/report.hpp"
#include "whatif/calibration.hpp"
#include "whatif/prompt.hpp"

namespace warden::whatif {
namespace {

workload::WorkloadConfig tiny_workload() {
  workload::WorkloadConfig c;
  c.system_tokens = 300;
  c.first_tokens = 500;
  c.turn_tokens = 60;
  c.turns = 4;
  return c;
}

TEST(IncrementalPrompt, EqualsTheFullTemplateRenderEveryTurn) {
  const workload::Workload w(tiny_workload());
  IncrementalPrompt inc;
  workload::Conversation conv = w.start_session(3);
  for (int turn = 0; turn < 4; ++turn) {
    const auto fast = inc.render(w, conv);
    const auto full = render_full(w, conv);
    ASSERT_TRUE(fast && full);
    EXPECT_EQ(*fast, *full) << "turn " << turn;
    w.add_reply(conv, w.synthetic_reply(conv, 40));
    w.next_turn(conv);
  }
  // A new session in the same slot starts from scratch.
  const workload::Conversation other = w.start_session(4);
  const auto fast = inc.render(w, other);
  const auto full = render_full(w, other);
  ASSERT_TRUE(fast && full);
  EXPECT_EQ(*fast, *full);
}

TEST(IncrementalPrompt, ReplyTokensSurviveTheRoundTrip) {
  // The engine's generated tokens, detokenized into the history, come back as the same tokens: the
  // next turn's prompt extends the previous prompt + reply exactly (what makes prefix hits possible).
  const workload::Workload w(tiny_workload());
  IncrementalPrompt inc;
  workload::Conversation conv = w.start_session(0);
  const auto first = inc.render(w, conv);
  ASSERT_TRUE(first);
  engine::Tokens reply;
  for (std::size_t i = 0; i < 30; ++i) {
    reply.push_back(engine::output_token(i * 7919, i));
  }
  w.add_reply(conv, engine::detokenize(reply));
  w.next_turn(conv);
  const auto second = inc.render(w, conv);
  ASSERT_TRUE(second);
  engine::Tokens expected = *first;
  expected.insert(expected.end(), reply.begin(), reply.end());
  ASSERT_GE(second->size(), expected.size());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), second->begin()));
}

TEST(Calibration, TheReferenceMatchesItself) {
  std::vector<report::Row> rows = report::reference_rows();
  for (auto& r : rows) {
    r.policy = r.policy == "off" ? "vllm-lb" : "affinity";
  }
  const Calibration cal = check_against_reference(rows, "vllm-lb", "affinity");
  EXPECT_TRUE(cal.pass) << calibration_summary(cal);
  EXPECT_EQ(cal.checks.size(), 44U);
  EXPECT_NE(side_by_side_markdown(rows, "vllm-lb", "affinity").find("| 16 | prefix hits (%) | 33.2 → 48.6 |"),
            std::string::npos);
}

TEST(Calibration, FlagsCellsOutsideTheirTolerance) {
  std::vector<report::Row> rows = report::reference_rows();
  for (auto& r : rows) {
    if (r.sessions == 16 && r.policy == "on") {
      r.prefix_hits = *r.prefix_hits + 8.5;  // beyond ±8
    }
    if (r.sessions == 32 && r.policy == "off") {
      r.output_tokens_per_min = *r.output_tokens_per_min / 1.6;  // beyond ×1.5
    }
    if (r.sessions == 4 && r.policy == "on") {
      r.ttfb_p50 = 3.0;  // on now loses the p50 column (and is ×7.9 off)
    }
  }
  const Calibration cal = check_against_reference(rows, "off", "on");
  EXPECT_FALSE(cal.pass);
  EXPECT_EQ(cal.failed, 4) << calibration_summary(cal);
}

}  // namespace
}  // namespace warden::whatif
