// The subscriber's sequence rules (gateway/subscriber/kv_sequence.hpp), message by message: what the
// replica's index is told to do for a fresh stream, a late join, gaps replayed or lost, a publisher
// restart, a replay that times out, and a payload that does not decode.
#include "gateway/subscriber/kv_sequence.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace warden::gateway;
using Clock = KvSequence::Clock;

namespace {

const Clock::time_point t0{};

KvMessage batch(std::int64_t seq) {
  warden::protocol::kv::EventBatch b;
  b.ts = static_cast<double>(seq);
  return {seq, b};
}

KvMessage broken(std::int64_t seq) {
  return {seq, warden::base::Result<warden::protocol::kv::EventBatch>(boost::system::in_place_error,
                                                                      std::string("truncated at byte 3"))};
}

// The steps as short words: "apply 3", "apply 3 replayed", "reset complete", "reset lost", "reset restart",
// "gap open", "gap join", "gap close", "decode error".
std::vector<std::string> words(const KvSequence::Out& out) {
  std::vector<std::string> w;
  for (const KvStep& s : out.steps) {
    if (const auto* a = std::get_if<KvApplyStep>(&s)) {
      w.push_back("apply " + std::to_string(a->seq) + (a->replayed ? " replayed" : ""));
    } else if (const auto* r = std::get_if<KvResetStep>(&s)) {
      w.push_back(std::string("reset ") + (r->restart ? "restart " : "") +
                  (r->complete ? "complete" : "lost"));
    } else if (const auto* g = std::get_if<KvGapStep>(&s)) {
      w.push_back(!g->open ? "gap close" : g->join ? "gap join" : "gap open");
    } else {
      w.push_back("decode error");
    }
  }
  return w;
}

using Words = std::vector<std::string>;

}  // namespace

TEST(KvSequence, AStreamFromSeqZeroMakesTheIndexCompleteAndAppliesInOrder) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.live(batch(0), t0, out);
  s.live(batch(1), t0, out);
  EXPECT_EQ(words(out), (Words{"reset complete", "apply 0", "apply 1"}));
  EXPECT_FALSE(out.replay_from);
}

TEST(KvSequence, ALateJoinAsksTheStartAndIsCompleteWhenTheBufferHoldsIt) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.live(batch(2), t0, out);
  ASSERT_EQ(out.replay_from, 0);
  s.live(batch(3), t0, out);  // kept while the replay runs
  s.replayed(batch(0), out);
  s.replayed(batch(1), out);
  s.replayed(batch(2), out);
  s.replay_ended(out);
  EXPECT_EQ(words(out), (Words{"gap join", "reset complete", "apply 0 replayed", "apply 1 replayed",
                               "apply 2 replayed", "apply 3", "gap close"}));
}

TEST(KvSequence, ALateJoinPastTheBufferIsIncomplete) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.live(batch(50), t0, out);
  s.replayed(batch(48), out);  // the buffer starts at 48
  s.replayed(batch(49), out);
  s.replay_ended(out);
  EXPECT_EQ(words(out), (Words{"gap join", "reset lost", "apply 48 replayed", "apply 49 replayed", "apply 50",
                               "gap close"}));
}

TEST(KvSequence, AGapIsReplayedFromTheNextExpectedSeq) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.live(batch(0), t0, out);
  s.live(batch(3), t0, out);
  ASSERT_EQ(out.replay_from, 1);
  s.replayed(batch(1), out);
  s.replayed(batch(2), out);
  s.replayed(batch(3), out);  // the publisher answers what was published live too
  s.replay_ended(out);
  s.live(batch(4), t0, out);
  EXPECT_EQ(words(out), (Words{"reset complete", "apply 0", "gap open", "apply 1 replayed",
                               "apply 2 replayed", "apply 3 replayed", "gap close", "apply 4"}));
}

TEST(KvSequence, AGapTheReplayCannotCoverClearsTheIndexIncomplete) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.live(batch(0), t0, out);
  s.live(batch(9), t0, out);
  s.replay_ended(out);  // nothing buffered
  EXPECT_EQ(words(out),
            (Words{"reset complete", "apply 0", "gap open", "reset lost", "apply 9", "gap close"}));
}

TEST(KvSequence, WithoutAReplayEndpointAGapIsLostAtOnce) {
  KvSequence s(false, std::chrono::seconds(2));
  KvSequence::Out out;
  s.live(batch(0), t0, out);
  s.live(batch(5), t0, out);
  EXPECT_FALSE(out.replay_from);
  EXPECT_EQ(words(out),
            (Words{"reset complete", "apply 0", "gap open", "reset lost", "apply 5", "gap close"}));
}

TEST(KvSequence, AReplayThatTimesOutIsAbandonedAndItsLateAnswersIgnored) {
  KvSequence s(true, std::chrono::milliseconds(100));
  KvSequence::Out out;
  s.live(batch(0), t0, out);
  s.live(batch(4), t0, out);
  s.tick(t0 + std::chrono::milliseconds(50), out);
  EXPECT_FALSE(out.replay_abandoned);
  s.tick(t0 + std::chrono::milliseconds(100), out);
  EXPECT_TRUE(out.replay_abandoned);
  s.replayed(batch(1), out);
  EXPECT_EQ(words(out),
            (Words{"reset complete", "apply 0", "gap open", "reset lost", "apply 4", "gap close"}));
}

TEST(KvSequence, SeqBackToZeroIsAPublisherRestartAndTheIndexStartsCompleteAgain) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.live(batch(0), t0, out);
  s.live(batch(1), t0, out);
  s.live(batch(0), t0, out);
  EXPECT_EQ(words(out), (Words{"reset complete", "apply 0", "apply 1", "reset restart complete", "apply 0"}));
}

TEST(KvSequence, ARestartWhoseStartWasMissedIsReplayedFromZero) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.live(batch(0), t0, out);
  s.live(batch(7), t0, out);  // a gap: replayed ...
  s.replayed(batch(1), out);
  s.replay_ended(out);  // ... lost from 2 to 6
  out = {};
  s.live(batch(8), t0, out);
  s.live(batch(2), t0, out);  // back: the publisher restarted and its seq 0 and 1 went by unseen
  ASSERT_EQ(out.replay_from, 0);
  s.replayed(batch(0), out);
  s.replayed(batch(1), out);
  s.replay_ended(out);
  EXPECT_EQ(words(out), (Words{"apply 8", "gap join", "reset restart complete", "apply 0 replayed",
                               "apply 1 replayed", "apply 2", "gap close"}));
}

TEST(KvSequence, APayloadThatDoesNotDecodeIsDroppedAndItsSeqCounts) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.live(batch(0), t0, out);
  s.live(broken(1), t0, out);
  s.live(batch(2), t0, out);
  EXPECT_EQ(words(out), (Words{"reset complete", "apply 0", "decode error", "apply 2"}));
  EXPECT_FALSE(out.replay_from);
}

TEST(KvSequence, AReplaySlowerThanTheStreamIsAbandonedPastItsBound) {
  KvSequence s(true, std::chrono::seconds(2), 2);
  KvSequence::Out out;
  s.live(batch(0), t0, out);
  s.live(batch(5), t0, out);
  s.live(batch(6), t0, out);
  s.live(batch(7), t0, out);  // a third batch while two are kept
  EXPECT_TRUE(out.replay_abandoned);
  EXPECT_EQ(words(out), (Words{"reset complete", "apply 0", "gap open", "reset lost", "apply 5", "apply 6",
                               "gap close", "apply 7"}));
}

TEST(KvSequence, AConnectionBeforeAnyBatchAsksTheStart) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.connected(t0, out);
  ASSERT_EQ(out.replay_from, 0);
  s.replayed(batch(0), out);
  s.replay_ended(out);
  s.live(batch(1), t0, out);
  s.connected(t0, out);  // a reconnection: the sequence shows what was missed
  EXPECT_EQ(words(out), (Words{"gap join", "reset complete", "apply 0 replayed", "gap close", "apply 1"}));
}

TEST(KvSequence, AnEmptyBufferAtConnectionIsAnEmptyEngine) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.connected(t0, out);
  s.replay_ended(out);  // nothing published since the engine started: nothing cached, the index whole
  s.live(batch(0), t0, out);
  EXPECT_EQ(words(out), (Words{"gap join", "reset complete", "gap close", "apply 0"}));
}

TEST(KvSequence, AReplayThatTimesOutAtConnectionClaimsNothing) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.connected(t0, out);
  s.tick(t0 + std::chrono::seconds(3), out);
  s.live(batch(0), t0 + std::chrono::seconds(3), out);
  EXPECT_EQ(words(out), (Words{"gap join", "gap close", "reset complete", "apply 0"}));
}

TEST(KvSequence, BatchesPublishedAsTheWardenJoinsAreAppliedOnceFromTheReplay) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.connected(t0, out);
  s.live(batch(0), t0, out);  // published while the start was asked: it reaches both sockets
  s.live(batch(1), t0, out);
  s.replayed(batch(0), out);
  s.replayed(batch(1), out);
  s.replay_ended(out);
  s.live(batch(2), t0, out);
  EXPECT_EQ(words(out), (Words{"gap join", "reset complete", "apply 0 replayed", "apply 1 replayed",
                               "gap close", "apply 2"}));
}

TEST(KvSequence, APublisherThatRestartsWhileAReplayRunsStartsAgainFromItsSeqZero) {
  KvSequence s(true, std::chrono::seconds(2));
  KvSequence::Out out;
  s.live(batch(0), t0, out);
  s.live(batch(3), t0, out);  // a gap: 1 and 2 asked
  s.live(batch(0), t0, out);  // the publisher restarted meanwhile
  s.replayed(batch(1), out);
  s.replayed(batch(2), out);
  s.replay_ended(out);
  EXPECT_EQ(words(out),
            (Words{"reset complete", "apply 0", "gap open", "apply 1 replayed", "apply 2 replayed", "apply 3",
                   "reset restart complete", "apply 0", "gap close"}));
}
