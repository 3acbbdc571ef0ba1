// The driver's parts: vLLM's balancer model (exact picks), the incremental prompt renderer, and the
// reference checks.
#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "engine/tokenizer.hpp"
#include "report/report.hpp"
#include "whatif/calibration.hpp"
#include "whatif/prompt.hpp"
#include "whatif/vllm_balancer.hpp"

namespace warden::whatif {
namespace {

TEST(VllmBalancer, EachServerScansFromItsOwnIndex) {
  VllmBalancer b(4, 0);
  ASSERT_EQ(b.api_servers(), 4U);
  for (std::uint32_t s = 0; s < 4; ++s) {
    EXPECT_EQ(b.start_index(s), s);
  }
  // Idle fleet: ties go to the first rank in each server's scan order.
  EXPECT_EQ(b.route_via(2), 2U);
  EXPECT_EQ(b.route_via(0), 0U);
}

TEST(VllmBalancer, OwnAssignmentsCountAsApiServersWaiting) {
  VllmBalancer b(4, 0);
  EXPECT_EQ(b.route_via(1), 1U);
  EXPECT_EQ(b.view(1)[1].waiting, 4U);  // client_count added to its local copy
  EXPECT_EQ(b.view(0)[1].waiting, 0U);  // other servers do not see it until the next publish
  EXPECT_EQ(b.route_via(1), 2U);
  EXPECT_EQ(b.route_via(1), 3U);
  EXPECT_EQ(b.route_via(1), 0U);
  EXPECT_EQ(b.route_via(1), 1U);  // all at 4 waiting now: back to the start
  const std::vector<RankLoad> idle(4);
  b.publish(idle);  // the coordinator's publish replaces the local copy
  EXPECT_EQ(b.view(1)[1].waiting, 0U);
}

TEST(VllmBalancer, LowestFourWaitingPlusRunning) {
  VllmBalancer b(4, 0);
  const std::vector<RankLoad> loads{{0, 5}, {0, 1}, {1, 0}, {0, 1}};  // scores 5, 1, 4, 1
  b.publish(loads);
  EXPECT_EQ(b.route_via(0), 1U);  // scan 0,1,2,3: first minimum is rank 1
  EXPECT_EQ(b.route_via(3), 3U);  // scan 3,0,1,2: first minimum is rank 3
  EXPECT_EQ(b.route_via(2), 3U);  // scan 2,3,0,1: rank 3
}

TEST(VllmBalancer, FewerServersThanRanksSpreadTheirStarts) {
  VllmBalancer b(4, 2);
  EXPECT_EQ(b.start_index(0), 0U);
  EXPECT_EQ(b.start_index(1), 2U);
}

TEST(VllmBalancer, RandomServerPickSpreadsAnIdleFleet) {
  VllmBalancer b(4, 0);
  core::SplitMixRng rng(7);
  std::vector<int> seen(4);
  for (int i = 0; i < 400; ++i) {
    const std::vector<RankLoad> idle(4);
    b.publish(idle);
    ++seen[b.route(rng)];
  }
  for (const int n : seen) {
    EXPECT_GT(n, 60);
  }
}

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
