#include "core/kv_index.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace warden::core {
namespace {

constexpr std::uint32_t bs = 16;

using Hashes = std::vector<std::uint64_t>;

// Hashes first .. first + n - 1.
Hashes run(std::uint64_t first, std::size_t n) {
  Hashes out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(first + i);
  }
  return out;
}

void store(KvIndex& index, const Hashes& hashes, std::optional<std::uint64_t> parent, std::uint64_t thread,
           std::optional<std::uint32_t> group = std::nullopt, bool attention = true) {
  index.stored(KvStore{hashes, parent, bs, KvTier::gpu, group, attention, thread});
}

void remove(KvIndex& index, const Hashes& hashes, std::optional<std::uint32_t> group = std::nullopt) {
  index.removed(hashes, KvTier::gpu, group);
}

TEST(KvIndex, AThreadHitsItsWholeChainAcrossTurns) {
  KvIndex index;
  EXPECT_FALSE(index.thread_tokens(7).has_value());  // joined late: a thread it never saw is unknown
  index.set_complete(true);
  EXPECT_EQ(index.thread_tokens(7), 0U);  // seen from the engine's start: it holds nothing of it
  store(index, run(100, 4), std::nullopt, 7);
  EXPECT_EQ(index.thread_tokens(7), 4 * bs);
  store(index, run(104, 3), 103, 7);  // the next turn extends it
  EXPECT_EQ(index.thread_tokens(7), 7 * bs);
  EXPECT_EQ(index.resident_tokens(), 7 * bs);
}

TEST(KvIndex, AnEvictionEndsTheHitAtTheFirstMissingBlock) {
  KvIndex index;
  store(index, run(100, 6), std::nullopt, 7);
  remove(index, {104, 105});  // LRU takes a prompt's tail first
  EXPECT_EQ(index.thread_tokens(7), 4 * bs);
  remove(index, {101});
  EXPECT_EQ(index.thread_tokens(7), 1 * bs);
  // Recomputed from the miss on: the same hashes come back and the whole chain hits again.
  store(index, {101, 102, 103, 104, 105}, 100, 7);
  EXPECT_EQ(index.thread_tokens(7), 6 * bs);
}

TEST(KvIndex, AThreadInheritsTheSharedStartItExtends) {
  KvIndex index;
  store(index, run(1, 5), std::nullopt, 1);  // the first conversation stores system prompt and tools
  store(index, run(10, 3), 5, 1);
  EXPECT_FALSE(index.start_length(1).has_value());  // no other thread has shown where the start ends
  store(index, run(20, 4), 5, 2);                   // the second extends the shared start (blocks 1..5)
  EXPECT_EQ(index.start_length(2), 5 * bs);
  EXPECT_EQ(index.start_length(1), 5 * bs);  // the first learns it from where the second branched off
  EXPECT_EQ(index.thread_tokens(2), 9 * bs);
  EXPECT_EQ(index.start_tokens(2), 5 * bs);
  EXPECT_EQ(index.thread_tokens(1), 8 * bs);
  // The start's last block evicted: the second thread's own blocks cannot be reached, its hit is the
  // start's resident run.
  remove(index, {5});
  EXPECT_EQ(index.thread_tokens(2), 4 * bs);
  EXPECT_EQ(index.start_tokens(2), 4 * bs);
}

TEST(KvIndex, AStartStoredBeforeTheIndexListenedIsUnknown) {
  KvIndex index;
  store(index, run(20, 4), 999, 2);  // its parent was never announced
  EXPECT_FALSE(index.thread_tokens(2).has_value());
  store(index, run(24, 2), 23, 2);
  EXPECT_FALSE(index.thread_tokens(2).has_value());
}

TEST(KvIndex, AThreadIsExpectedToPartFromItsChainWhereItsLastRequestDid) {
  KvIndex index;
  index.set_complete(true);
  store(index, run(100, 4), std::nullopt, 7);  // turn 1: its prompt
  store(index, run(104, 2), 103, 7);           // ... and its reply, filled by decode
  EXPECT_EQ(index.thread_tokens(7), 6 * bs);   // nothing learned yet: the whole chain
  // Turn 2 renders the reply otherwise: it reuses the prompt's 4 blocks and stores its own from there.
  index.sent(7, false);
  store(index, run(200, 5), 103, 7);
  store(index, run(205, 2), 204, 7);  // its reply
  // Turn 3 will part as far from the end: the last reply's 2 blocks are not counted.
  EXPECT_EQ(index.thread_tokens(7), 9 * bs);
  remove(index, {104, 105});  // turn 1's unused reply goes; nothing the thread would hit
  EXPECT_EQ(index.thread_tokens(7), 9 * bs);
  // Another thread's first follow-up is expected to part as this one did, until it shows its own.
  store(index, run(500, 4), std::nullopt, 8);
  store(index, run(504, 2), 503, 8);
  EXPECT_EQ(index.thread_tokens(8), 4 * bs);
  // A request whose hit was cut by an eviction computes the chain's own blocks again: no loss learned from
  // that, whatever it stores after them.
  remove(index, {203, 204});
  index.sent(7, false);
  store(index, {203}, 202, 7);
  store(index, {204, 205, 206}, 203, 7);
  store(index, run(210, 2), 206, 7);
  EXPECT_EQ(index.thread_tokens(7), 13 * bs);  // 4 + 7 + its 2 new ones: nothing lost
  // A turn that reuses its whole chain (its first store extends the tip) unlearns the loss.
  index.sent(7, false);
  store(index, run(300, 3), 211, 7);
  EXPECT_EQ(index.thread_tokens(7), 16 * bs);
}

TEST(KvIndex, ATaskThatBeginsAnewAfterTheStartTeachesNoLoss) {
  KvIndex index;
  index.set_complete(true);
  store(index, run(1, 4), std::nullopt, 1);  // the shared start
  store(index, run(10, 20), 4, 7);           // a long task of thread 7
  // Its next task begins again after the start: 20 blocks of the chain are not reused, but that is not
  // where its turns part from their chain.
  index.sent(7, true);
  store(index, run(40, 2), 4, 7);
  EXPECT_EQ(index.thread_tokens(7), 6 * bs);  // the start and the new task's own blocks
  index.sent(7, false);
  store(index, run(42, 1), 41, 7);
  EXPECT_EQ(index.thread_tokens(7), 7 * bs);
}

TEST(KvIndex, AChainComputedAgainFromThePromptsStartTeachesNoLoss) {
  KvIndex index;
  index.set_complete(true);
  store(index, run(100, 6), std::nullopt, 7);
  remove(index, {100, 101, 102, 103, 104, 105});
  // The whole chain evicted: its next request computes it again from the first block, then goes on.
  index.sent(7, false);
  store(index, run(100, 3), std::nullopt, 7);
  store(index, {103, 104, 105, 106}, 102, 7);
  EXPECT_EQ(index.thread_tokens(7), 7 * bs);
}

TEST(KvIndex, DuplicateBlocksLeaveWithTheirLastCopy) {
  KvIndex index;
  store(index, run(100, 3), std::nullopt, 7);
  store(index, run(100, 3), std::nullopt, 8);  // computed twice at once: two blocks of each hash
  remove(index, {102});
  EXPECT_EQ(index.thread_tokens(7), 3 * bs);
  EXPECT_EQ(index.thread_tokens(8), 3 * bs);
  remove(index, {102});
  EXPECT_EQ(index.thread_tokens(7), 2 * bs);
  EXPECT_EQ(index.thread_tokens(8), 2 * bs);
}

TEST(KvIndex, StateGroupsNeitherEvictNorCountAsCache) {
  KvIndex index;
  const Hashes h = run(100, 4);
  store(index, h, std::nullopt, 7, 0, true);
  store(index, h, std::nullopt, 7, 1, false);  // a mamba group: the same hashes
  store(index, h, std::nullopt, 7, 2, false);
  EXPECT_EQ(index.thread_tokens(7), 4 * bs);
  EXPECT_EQ(index.resident_tokens(), 4 * bs);
  remove(index, {103}, 1);  // a state group's removal is not an eviction of the attention block
  EXPECT_EQ(index.resident_tokens(), 4 * bs);
  // ... but the hit ends at the last block with a saved state left (group 2 still holds 103's).
  EXPECT_EQ(index.thread_tokens(7), 4 * bs);
  remove(index, {103}, 2);
  EXPECT_EQ(index.thread_tokens(7), 3 * bs);
  remove(index, {103}, 7);  // a group no store named: ignored
  EXPECT_EQ(index.resident_tokens(), 4 * bs);
}

TEST(KvIndex, AHybridHitEndsAtTheLastSavedState) {
  KvIndex index;
  store(index, run(100, 8), std::nullopt, 7, 0, true);
  store(index, {102, 105}, std::nullopt, 7, 1, false);  // states saved at chunk ends only
  EXPECT_EQ(index.thread_tokens(7), 6 * bs);
  remove(index, {106}, 0);
  EXPECT_EQ(index.thread_tokens(7), 6 * bs);
  remove(index, {104}, 0);
  EXPECT_EQ(index.thread_tokens(7), 3 * bs);
}

TEST(KvIndex, TheCpuTierContinuesAThreadPastItsGpuHit) {
  KvIndex index;
  store(index, run(100, 6), std::nullopt, 7);
  for (std::uint64_t h = 100; h < 106; ++h) {
    const Hashes one{h};
    index.stored(KvStore{one, std::nullopt, 0, KvTier::cpu, std::nullopt, true, 0});
  }
  remove(index, {103, 104, 105});
  EXPECT_EQ(index.thread_tokens(7), 3 * bs);
  EXPECT_EQ(index.thread_offload_tokens(7), 3 * bs);
  index.removed(Hashes{104}, KvTier::cpu, std::nullopt);
  EXPECT_EQ(index.thread_offload_tokens(7), 1 * bs);
  EXPECT_EQ(index.stats().cpu_blocks, 5U);
}

TEST(KvIndex, ClearedForgetsEverything) {
  KvIndex index;
  store(index, run(100, 6), std::nullopt, 7);
  index.cleared();
  EXPECT_EQ(index.thread_tokens(7), 0U);  // known to be gone
  EXPECT_EQ(index.resident_tokens(), 0U);
  EXPECT_EQ(index.stats().chains, 0U);
}

TEST(KvIndex, PastItsBoundTheIndexClearsItselfAndSaysSo) {
  KvIndex index(KvIndexLimits{.max_blocks = 10});
  store(index, run(100, 6), std::nullopt, 7);
  store(index, run(106, 6), 105, 7);
  EXPECT_EQ(index.stats().overflows, 1U);
  EXPECT_EQ(index.stats().gpu_blocks, 0U);
  EXPECT_FALSE(index.thread_tokens(7).has_value());
}

TEST(KvIndex, EvictedChainsAreReleased) {
  KvIndex index;
  for (std::uint64_t t = 1; t <= 100; ++t) {
    store(index, run(t * 1000, 4), std::nullopt, t);
    remove(index, run(t * 1000, 4));
  }
  EXPECT_EQ(index.stats().chains, 0U);
  EXPECT_EQ(index.stats().threads, 0U);
  EXPECT_EQ(index.stats().gpu_blocks, 0U);
}

}  // namespace
}  // namespace warden::core
