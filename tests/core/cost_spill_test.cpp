// Cost-aware spill over scripted snapshots, the Router's prefill backlog, and the prefill rate estimate.
#include <gtest/gtest.h>

#include <array>

#include "core/cost_spill.hpp"
#include "core/decide.hpp"
#include "core/helpers.hpp"
#include "core/prefill_rate.hpp"
#include "core/router.hpp"

namespace warden::core {
namespace {

using namespace std::chrono_literals;
using testing::idle_snapshot;
using testing::known_conversation;
using testing::new_conversation;
using testing::routed;

// Three replicas prefilling 1,000 tokens/s with the given backlogs; cost spill on, margin 2 s.
Snapshot backlogs(std::uint64_t home, std::uint64_t one, std::uint64_t two) {
  Snapshot s = idle_snapshot(3);
  s.routing.cost_spill.enabled = true;
  const std::array<std::uint64_t, 3> b{home, one, two};
  for (std::size_t i = 0; i < 3; ++i) {
    s.replicas[i].prefill_tokens_per_second = 1'000;
    s.replicas[i].prefill_backlog_tokens = b[i];
  }
  return s;
}

// A turn of 3,000 tokens whose previous 2,500 are cached at home (replica 0).
RequestFacts turn() {
  RequestFacts f = known_conversation(0);
  f.prompt_tokens = 3'000;
  f.home_cached_tokens = 2'500;
  return f;
}

TEST(CostSpill, PredictedTtftIsBacklogPlusOwnPartAtTheRate) {
  ReplicaState r;
  EXPECT_FALSE(predicted_ttft(r, 1'000));
  r.prefill_tokens_per_second = 2'000;
  r.prefill_backlog_tokens = 3'000;
  EXPECT_DOUBLE_EQ(*predicted_ttft(r, 1'000), 2.0);
  EXPECT_EQ(uncached_at_home(turn()), 500u);
}

TEST(CostSpill, StaysHomeWhileTheQueueThereCostsLessThanRecomputing) {
  ScriptedRng rng;
  // Home: (4,000 + 500) / 1,000 = 4.5 s; elsewhere (0 + 3,000) / 1,000 = 3 s: better, but not by 2 s.
  EXPECT_EQ(decide(backlogs(4'000, 0, 0), turn(), rng), routed(0, Route::sticky));
  // Far more in flight than the count threshold, yet no prefill queued: stays home.
  Snapshot busy = backlogs(0, 0, 0);
  busy.replicas[0].in_flight = 30;
  EXPECT_EQ(decide(busy, turn(), rng), routed(0, Route::sticky));
}

TEST(CostSpill, SpillsToTheFastestOtherReplicaBeyondTheMargin) {
  ScriptedRng rng;
  // Home: 20.5 s; replica 1: 8 s; replica 2: 4 s.
  EXPECT_EQ(decide(backlogs(20'000, 5'000, 1'000), turn(), rng), routed(2, Route::spilled));
  // A faster replica wins at the same backlog.
  Snapshot s = backlogs(20'000, 5'000, 5'000);
  s.replicas[1].prefill_tokens_per_second = 4'000;
  EXPECT_EQ(decide(s, turn(), rng), routed(1, Route::spilled));
}

TEST(CostSpill, UnknownRateAtHomeFallsBackToTheCountRule) {
  ScriptedRng rng;
  Snapshot s = backlogs(20'000, 0, 0);
  s.replicas[0].prefill_tokens_per_second = 0;
  EXPECT_EQ(decide(s, turn(), rng), routed(0, Route::sticky));
  s.replicas[0].in_flight = 9;  // over the threshold of 8
  s.replicas[2].in_flight = 1;
  EXPECT_EQ(decide(s, turn(), rng), routed(1, Route::spilled));
}

TEST(CostSpill, TargetsOfUnknownRateOrWithoutRoomAreSkipped) {
  ScriptedRng rng;
  Snapshot s = backlogs(20'000, 0, 1'000);
  s.replicas[1].prefill_tokens_per_second = 0;
  EXPECT_EQ(decide(s, turn(), rng), routed(2, Route::spilled));
  // With admission on, a spill must not push a target's resident working set over its capacity.
  s.routing.admission.enabled = true;
  s.replicas[2].kv_capacity_tokens = 10'000;
  s.replicas[2].held_tokens = 8'000;  // + 3,000 > 10,000
  EXPECT_EQ(decide(s, turn(), rng), routed(0, Route::sticky));
}

TEST(CostSpill, RouterKeepsTheBacklogUntilTheFirstToken) {
  Router router;
  std::array<ReplicaMetrics, 1> metrics{};
  SplitMixRng rng(1);
  const Decision first = router.route(new_conversation(42, 3'000), metrics, 1s, rng);
  EXPECT_EQ(first.prefill_tokens, 3'000u);
  EXPECT_EQ(router.view(1s).prefill_backlog_tokens[0], 3'000u);
  router.first_token(first);
  router.finish(*first.replica);
  // The next turn at home prefills only what its previous prompt did not cover.
  const Decision next = router.route(new_conversation(42, 3'400), metrics, 2s, rng);
  EXPECT_EQ(next.route, Route::sticky);
  EXPECT_EQ(next.prefill_tokens, 400u);
  EXPECT_EQ(router.view(2s).prefill_backlog_tokens[0], 400u);
  router.abandon(next);
  EXPECT_EQ(router.view(2s).prefill_backlog_tokens[0], 0u);
}

TEST(PrefillRate, MeasuresOnlyIntervalsWithRequestsWaiting) {
  PrefillRate rate;
  rate.observe(0s, 0, 0, 0);
  rate.observe(1s, 5'000, 1'000, 3);  // idle at the start: not saturated throughout
  EXPECT_EQ(rate.tokens_per_second(), 0.0);
  rate.observe(2s, 9'000, 1'000, 2);  // 4,000 computed tokens in 1 s
  EXPECT_DOUBLE_EQ(rate.tokens_per_second(), 4'000.0);
  rate.observe(4s, 11'000, 1'000, 1);  // 1,000/s, averaged in with weight 0.3
  EXPECT_DOUBLE_EQ(rate.tokens_per_second(), 4'000.0 + PrefillRate::smoothing * (1'000.0 - 4'000.0));
}

TEST(PrefillRate, ARestartedEngineStartsAfresh) {
  PrefillRate rate;
  rate.observe(0s, 10'000, 0, 1);
  rate.observe(1s, 12'000, 0, 1);
  const double before = rate.tokens_per_second();
  rate.observe(2s, 100, 0, 1);  // counters went back
  EXPECT_EQ(rate.tokens_per_second(), before);
  rate.observe(3s, 2'100, 0, 1);
  EXPECT_GT(rate.tokens_per_second(), 0.0);
}

}  // namespace
}  // namespace warden::core
