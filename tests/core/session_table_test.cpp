#include <gtest/gtest.h>

#include <algorithm>

#include "core/rng.hpp"
#include "core/session_table.hpp"

namespace warden::core {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

Time at(std::int64_t s) {
  return seconds(s);
}

// A table whose active window is a fixed minute (no adaptation to the turn gaps).
SessionTableConfig fixed_minute_window() {
  SessionTableConfig config;
  config.active_window = seconds(60);
  config.adaptive_gap_factor = 0;
  return config;
}

TEST(SessionTable, AssignLookupAndMoveHome) {
  SessionTable t;
  EXPECT_FALSE(t.lookup(1, at(0)));
  t.assign(1, 2, 500, at(10));
  auto e = t.lookup(1, at(11));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->home, 2u);
  EXPECT_EQ(e->prompt_tokens, 500u);
  EXPECT_EQ(e->last_seen, at(10));
  t.assign(1, 3, 900, at(20));
  EXPECT_EQ(t.lookup(1, at(20))->home, 3u);
  EXPECT_EQ(t.size(), 1u);
}

TEST(SessionTable, AggregatesFollowHomeAndPromptSize) {
  SessionTable t;
  t.assign(1, 0, 1000, at(0));
  t.assign(2, 0, 3000, at(1));
  t.assign(3, 1, 500, at(2));
  EXPECT_EQ(t.replica(0).active_conversations, 2u);
  EXPECT_EQ(t.replica(0).held_tokens, 4000u);
  EXPECT_EQ(t.replica(1).held_tokens, 500u);
  // Next turn is longer: held tokens follow the last prompt.
  t.touch(1, 1400, at(3));
  EXPECT_EQ(t.replica(0).held_tokens, 4400u);
  EXPECT_EQ(t.lookup(1, at(3))->home, 0u);
  // Re-homing moves both aggregates.
  t.assign(2, 1, 3000, at(4));
  EXPECT_EQ(t.replica(0).active_conversations, 1u);
  EXPECT_EQ(t.replica(0).held_tokens, 1400u);
  EXPECT_EQ(t.replica(1).active_conversations, 2u);
  EXPECT_EQ(t.replica(1).held_tokens, 3500u);
  EXPECT_EQ(t.replica(7).active_conversations, 0u);
  const auto all = t.replicas(3);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].active_conversations, 0u);
}

TEST(SessionTable, AnEndedConversationKeepsItsHomeButCountsNoLongerUntilSeenAgain) {
  SessionTable t(fixed_minute_window());
  t.assign(1, 0, 500, at(0));
  t.assign(2, 0, 700, at(1));
  EXPECT_TRUE(t.end(1));
  EXPECT_EQ(t.replica(0).active_conversations, 1u);
  EXPECT_EQ(t.replica(0).held_tokens, 700u);
  EXPECT_EQ(t.lookup(1, at(2))->home, 0u);
  EXPECT_FALSE(t.end(1));  // once
  EXPECT_FALSE(t.end(9));  // unknown
  // Leaving the window, or coming back into it when the window grows, takes nothing more off or on.
  t.expire(at(90));
  EXPECT_EQ(t.replica(0).active_conversations, 0u);
  EXPECT_EQ(t.replica(0).held_tokens, 0u);
  // Seen again: it counts again, with its new prompt.
  t.touch(1, 800, at(91));
  EXPECT_EQ(t.replica(0).active_conversations, 1u);
  EXPECT_EQ(t.replica(0).held_tokens, 800u);
  EXPECT_TRUE(t.end(1));
  t.assign(1, 2, 900, at(92));  // and moved
  EXPECT_EQ(t.replica(0).active_conversations, 0u);
  EXPECT_EQ(t.replica(2).held_tokens, 900u);
  EXPECT_TRUE(t.erase(1));
  EXPECT_EQ(t.replica(2).active_conversations, 0u);
}

TEST(SessionTable, BogusHomeIndexIsRememberedButNotAggregated) {
  SessionTable t;
  t.assign(1, 0xFFFFFFF0u, 100, at(0));
  EXPECT_EQ(t.lookup(1, at(0))->home, 0xFFFFFFF0u);
  EXPECT_EQ(t.replica(0xFFFFFFF0u).active_conversations, 0u);
  EXPECT_LT(t.memory_bytes(), 4096u);
  t.expire(at(3600));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.active_size(), 0u);
}

TEST(SessionTable, TouchOfUnknownKeyDoesNothing) {
  SessionTable t;
  t.touch(9, 100, at(0));
  EXPECT_EQ(t.size(), 0u);
}

TEST(SessionTable, ActiveWindowThenTtl) {
  SessionTableConfig config;
  config.active_window = minutes(5);
  config.idle_ttl = minutes(30);
  SessionTable t(config);
  t.assign(1, 0, 100, at(0));
  t.assign(2, 0, 200, at(200));
  t.expire(at(300));  // exactly at the window edge: still active
  EXPECT_EQ(t.replica(0).active_conversations, 2u);
  t.expire(at(301));
  EXPECT_EQ(t.replica(0).active_conversations, 1u);
  EXPECT_EQ(t.replica(0).held_tokens, 200u);
  EXPECT_EQ(t.active_size(), 1u);
  // Idle but remembered: its home is still known.
  EXPECT_EQ(t.lookup(1, at(301))->home, 0u);
  // Seen again: active again.
  t.touch(1, 150, at(400));
  EXPECT_EQ(t.replica(0).active_conversations, 2u);
  EXPECT_EQ(t.replica(0).held_tokens, 350u);
  t.expire(at(400 + 30 * 60 + 1));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.replica(0).active_conversations, 0u);
  EXPECT_EQ(t.replica(0).held_tokens, 0u);
}

TEST(SessionTable, LookupHidesEntriesPastTtlBeforeExpireRuns) {
  SessionTableConfig config;
  config.idle_ttl = seconds(60);
  SessionTable t(config);
  t.assign(1, 0, 100, at(0));
  EXPECT_TRUE(t.lookup(1, at(60)));
  EXPECT_FALSE(t.lookup(1, at(61)));
  EXPECT_EQ(t.size(), 1u);
}

// A crowd of conversations that went idle together (a flood of new ids) leaves over several calls, at most
// expire_budget per call, never all in one request; and what is past the TTL but not dropped yet is gone
// to every lookup already.
TEST(SessionTable, ExpiryIsBoundedPerCallAndRepeatedCallsFinishIt) {
  constexpr std::size_t budget = SessionTable::expire_budget;
  constexpr std::size_t n = 3 * budget + 10;
  SessionTable t(fixed_minute_window());
  for (std::uint64_t key = 1; key <= n; ++key) {
    t.assign(key, key % 4, 10, at(0));
  }
  EXPECT_FALSE(t.expire(at(61)));
  EXPECT_EQ(t.active_size(), n - budget) << "at most the budget left the window";
  int calls = 1;
  for (bool done = false; !done; ++calls) {
    done = t.expire(at(61));
    ASSERT_LE(calls, 10);
  }
  EXPECT_EQ(calls, 4) << "3 x the budget and 10 more";
  EXPECT_EQ(t.active_size(), 0u);
  EXPECT_EQ(t.replica(0).active_conversations + t.replica(1).active_conversations, 0u);
  EXPECT_EQ(t.size(), n);

  const Time past_ttl = at(30 * 60 + 1);
  EXPECT_FALSE(t.expire(past_ttl));
  EXPECT_EQ(t.size(), n - budget) << "at most the budget forgotten";
  for (std::uint64_t key = 1; key <= n; ++key) {
    ASSERT_FALSE(t.lookup(key, past_ttl)) << "expired, dropped or not: gone to a lookup";
  }
  calls = 1;
  for (bool done = false; !done; ++calls) {
    done = t.expire(past_ttl);
    ASSERT_LE(calls, 10);
  }
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(t.size(), 0u);
}

// Straight from active to past the TTL: each entry leaves the window, then the table, within the budget.
TEST(SessionTable, AnActiveCrowdPastTheTtlLeavesWithinTheBudgetPerCall) {
  constexpr std::size_t n = 2 * SessionTable::expire_budget;
  SessionTable t(fixed_minute_window());
  for (std::uint64_t key = 1; key <= n; ++key) {
    t.assign(key, 0, 10, at(0));
  }
  std::size_t before = t.size() + t.active_size();
  int calls = 0;
  for (bool done = false; !done; ++calls) {
    done = t.expire(at(30 * 60 + 1));
    EXPECT_LE(before - (t.size() + t.active_size()), SessionTable::expire_budget);
    before = t.size() + t.active_size();
  }
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.replica(0).active_conversations, 0u);
  EXPECT_EQ(t.replica(0).held_tokens, 0u);
}

// An entry past the TTL that expire() has not dropped yet is a new conversation to every insert, as it
// was when expire() dropped everything at once: no turn gap observed, no computed mark kept, a learned
// home taken, a keep-alive refused.
TEST(SessionTable, AnEntryPastTheTtlNotDroppedYetIsANewConversationToInserts) {
  SessionTable t;
  t.assign(1, 0, 100, at(0));
  t.mark_computed(1, 5000);
  t.assign(1, 0, 200, at(1801));
  EXPECT_EQ(t.typical_gap(), Time::zero()) << "not a conversation's return";
  EXPECT_EQ(t.lookup(1, at(1801))->home_computed_at, SessionEntry::unknown);
  EXPECT_EQ(t.replica(0).active_conversations, 1u);
  EXPECT_EQ(t.replica(0).held_tokens, 200u);

  t.assign(2, 1, 100, at(1801));
  EXPECT_TRUE(t.learn(2, 3, 50, at(3602))) << "another warden's home for a conversation gone here";
  EXPECT_EQ(t.lookup(2, at(3602))->home, 3u);
  t.assign(4, 1, 100, at(3602));
  EXPECT_FALSE(t.seen_elsewhere(4, 1, 900, at(5403)));
  t.touch(4, 100, at(5403));
  EXPECT_FALSE(t.lookup(4, at(5403)));
  EXPECT_EQ(t.replica(1).active_conversations, 0u);
}

TEST(SessionTable, CapacityEvictsLeastRecentlySeenIdleFirst) {
  SessionTableConfig config;
  config.max_entries = 3;
  config.active_window = seconds(10);
  SessionTable t(config);
  t.assign(1, 0, 10, at(0));
  t.assign(2, 0, 10, at(1));
  t.assign(3, 1, 10, at(20));
  t.touch(1, 10, at(21));  // 1 is now the most recent; 2 is the LRU entry
  t.assign(4, 1, 10, at(22));
  EXPECT_EQ(t.size(), 3u);
  EXPECT_FALSE(t.lookup(2, at(22)));
  EXPECT_TRUE(t.lookup(1, at(22)));
  t.expire(at(31));  // 3 leaves the active window (seen at 20); 1 (21) and 4 (22) stay active
  EXPECT_EQ(t.active_size(), 2u);
  t.assign(5, 0, 10, at(31));
  EXPECT_FALSE(t.lookup(3, at(31))) << "the idle entry goes first";
  EXPECT_TRUE(t.lookup(1, at(31)));
  EXPECT_TRUE(t.lookup(4, at(31)));
  EXPECT_EQ(t.replica(0).active_conversations + t.replica(1).active_conversations, 3u);
}

TEST(SessionTable, ShrinkingCapacityEvictsAtOnce) {
  SessionTable t;
  for (std::uint64_t k = 0; k < 10; ++k) {
    t.assign(k, static_cast<ReplicaIndex>(k % 2), 100, at(static_cast<std::int64_t>(k)));
  }
  SessionTableConfig config = t.config();
  config.max_entries = 4;
  t.reconfigure(config);
  EXPECT_EQ(t.size(), 4u);
  EXPECT_FALSE(t.lookup(5, at(10)));
  EXPECT_TRUE(t.lookup(6, at(10)));
  EXPECT_EQ(t.replica(0).active_conversations + t.replica(1).active_conversations, 4u);
}

TEST(SessionTable, EraseForgetsAndUpdatesAggregates) {
  SessionTable t;
  t.assign(1, 0, 100, at(0));
  EXPECT_TRUE(t.erase(1));
  EXPECT_FALSE(t.erase(1));
  EXPECT_EQ(t.replica(0).active_conversations, 0u);
  EXPECT_EQ(t.replica(0).held_tokens, 0u);
}

TEST(SessionTable, OutOfOrderTimestampsKeepTheTableOrdered) {
  SessionTableConfig config;
  config.active_window = seconds(10);
  SessionTable t(config);
  t.assign(1, 0, 100, at(100));
  t.assign(2, 0, 100, at(99));  // a slightly older stamp from another thread: treated as 100
  EXPECT_EQ(t.lookup(2, at(100))->last_seen, at(100));
  t.expire(at(110));
  EXPECT_EQ(t.active_size(), 2u);
  t.expire(at(111));
  EXPECT_EQ(t.active_size(), 0u);
}

TEST(SessionTable, AggregatesMatchABruteForceRecountUnderRandomOperations) {
  SessionTableConfig config;
  config.max_entries = 200;
  config.active_window = seconds(50);
  config.idle_ttl = seconds(400);
  SessionTable t(config);
  SplitMixRng g(99);
  std::int64_t now = 0;
  for (int i = 0; i < 20'000; ++i) {
    now += static_cast<std::int64_t>(g.uniform(3));
    const std::uint64_t key = g.uniform(400);
    const auto op = g.uniform(10);
    if (op < 6) {
      t.assign(key, static_cast<ReplicaIndex>(g.uniform(4)), static_cast<std::uint32_t>(g.uniform(1000)),
               at(now));
    } else if (op < 9) {
      t.touch(key, static_cast<std::uint32_t>(g.uniform(1000)), at(now));
    } else {
      t.erase(key);
    }
    t.expire(at(now));
    ASSERT_LE(t.size(), 200u);
    if (i % 500 == 0) {
      // Recount from lookups: an entry is active if seen within the window.
      std::uint64_t held[4] = {};
      std::uint32_t active[4] = {};
      std::size_t live = 0;
      for (std::uint64_t k = 0; k < 400; ++k) {
        if (auto e = t.lookup(k, at(now))) {
          ++live;
          // The window adapts to the observed turn gaps; the table says which one is in force.
          if (at(now) - e->last_seen <= t.active_window()) {
            ++active[e->home];
            held[e->home] += e->prompt_tokens;
          }
        }
      }
      ASSERT_EQ(live, t.size());
      for (ReplicaIndex r = 0; r < 4; ++r) {
        ASSERT_EQ(t.replica(r).active_conversations, active[r]) << "replica " << r << " step " << i;
        ASSERT_EQ(t.replica(r).held_tokens, held[r]) << "replica " << r << " step " << i;
      }
    }
  }
}

TEST(SessionTable, ActiveWindowAdaptsToTheTypicalTurnGap) {
  SessionTableConfig config;  // defaults: 5 minutes at most, 3 typical gaps, 10 s at least
  SessionTable t(config);
  EXPECT_EQ(t.active_window(), minutes(5)) << "no conversation came back yet";
  t.assign(1, 0, 100, at(0));
  t.assign(2, 1, 100, at(0));
  t.touch(1, 200, at(20));  // one turn gap of 20 s
  EXPECT_EQ(t.typical_gap(), seconds(20));
  EXPECT_EQ(t.active_window(), seconds(60));
  t.expire(at(60));
  EXPECT_EQ(t.replica(1).active_conversations, 1u) << "seen 60 s ago: exactly at the edge";
  t.expire(at(61));
  EXPECT_EQ(t.replica(1).active_conversations, 0u) << "gone for three typical gaps: most likely ended";
  EXPECT_EQ(t.replica(1).held_tokens, 0u);
  EXPECT_EQ(t.replica(0).active_conversations, 1u);
  EXPECT_EQ(t.lookup(2, at(61))->home, 1u) << "still remembered: its home is kept until the TTL";
  // Sub-second gaps are parallel requests of one turn and do not shrink the window.
  t.touch(1, 200, at(61));
  t.touch(1, 200, at(61) + std::chrono::milliseconds(300));
  EXPECT_EQ(t.typical_gap(), std::chrono::milliseconds(22'625)) << "20 s + (41 s - 20 s) / 8";
}

TEST(SessionTable, AdaptiveWindowStaysWithinItsBoundsAndCanBeTurnedOff) {
  SessionTableConfig config;
  config.active_window = seconds(100);
  SessionTable t(config);
  t.assign(1, 0, 100, at(0));
  t.touch(1, 100, at(2));  // a 2 s gap: 3 x 2 s = 6 s, below the 10 s floor
  EXPECT_EQ(t.active_window(), seconds(10));
  t.touch(1, 100, at(1000));  // a 998 s sample is capped at the 100 s window before averaging
  EXPECT_EQ(t.typical_gap(), std::chrono::milliseconds(14'250));
  EXPECT_EQ(t.active_window(), std::chrono::milliseconds(42'750));
  t.touch(1, 100, at(1100));
  t.touch(1, 100, at(1200));
  for (int i = 3; i < 40; ++i) {
    t.touch(1, 100, at(1000 + 100 * i));
  }
  EXPECT_EQ(t.active_window(), seconds(100)) << "never beyond the configured window";
  config.adaptive_gap_factor = 0.0;
  t.reconfigure(config);
  t.touch(1, 100, at(5000));
  EXPECT_EQ(t.active_window(), seconds(100)) << "factor 0: the fixed window";
}

TEST(SessionTable, AWindowThatGrowsAgainReactivatesRecentConversations) {
  SessionTable t;
  t.assign(1, 0, 100, at(0));
  t.touch(1, 100, at(10));  // typical gap 10 s: window 30 s
  t.assign(3, 1, 700, at(25));
  t.expire(at(56));
  EXPECT_EQ(t.replica(1).active_conversations, 0u);
  EXPECT_EQ(t.active_size(), 0u);
  // Conversation 1 comes back after 60 s: turns got slower, the window grows to 3 x 16.25 s = 48.75 s,
  // and conversation 3, seen 45 s ago, counts again.
  t.touch(1, 100, at(70));
  EXPECT_EQ(t.typical_gap(), std::chrono::milliseconds(16'250));
  t.expire(at(70));
  EXPECT_EQ(t.replica(1).active_conversations, 1u);
  EXPECT_EQ(t.replica(1).held_tokens, 700u);
  EXPECT_EQ(t.active_size(), 2u);
}

TEST(SessionTable, ExportThenImportRestoresHomesAndAggregates) {
  SessionTableConfig config = fixed_minute_window();
  config.idle_ttl = minutes(10);
  SessionTable t(config);
  t.assign(1, 0, 1000, at(0));  // past the TTL at 700: not exported
  t.assign(2, 1, 2000, at(200));
  t.assign(3, 2, 3000, at(650));
  t.assign(4, 1, 4000, at(690));
  const auto out = t.export_entries(at(700));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out.front().key, 2u) << "least recently seen first";
  EXPECT_EQ(out.back().key, 4u);
  EXPECT_EQ(out.back().entry.home, 1u);
  EXPECT_EQ(out.back().entry.prompt_tokens, 4000u);
  EXPECT_EQ(out.back().entry.last_seen, at(690));

  SessionTable back(config);
  back.import_entries(out, at(700));
  EXPECT_EQ(back.size(), 3u);
  EXPECT_FALSE(back.lookup(1, at(700)));
  EXPECT_EQ(back.lookup(2, at(700))->home, 1u);
  EXPECT_EQ(back.lookup(3, at(700))->last_seen, at(650));
  // Aggregates over the active window (60 s): 3 and 4 are active, 2 is remembered but idle.
  EXPECT_EQ(back.active_size(), 2u);
  EXPECT_EQ(back.replica(1).active_conversations, 1u);
  EXPECT_EQ(back.replica(1).held_tokens, 4000u);
  EXPECT_EQ(back.replica(2).held_tokens, 3000u);
  // Time moves on as if the table had never been away: 2 leaves at the TTL, 4 stays.
  back.expire(at(801));
  EXPECT_FALSE(back.lookup(2, at(801)));
  EXPECT_TRUE(back.lookup(4, at(801)));
}

TEST(SessionTable, ImportSkipsExpiredKeepsLiveEntriesAndHonoursCapacity) {
  SessionTableConfig config;
  config.max_entries = 2;
  config.idle_ttl = seconds(100);
  SessionTable t(config);
  t.assign(7, 3, 70, at(150));
  const std::vector<SessionRecord> stored{{1, {0, 10, at(40)}},  // past the TTL at 150
                                          {2, {1, 20, at(120)}},
                                          {7, {0, 99, at(149)}},  // known already: the live entry wins
                                          {3, {2, 30, at(130)}}};
  t.import_entries(stored, at(150));
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.lookup(7, at(150))->home, 3u);
  EXPECT_TRUE(t.lookup(3, at(150))) << "the most recent imported entry is kept";
  EXPECT_FALSE(t.lookup(2, at(150)));
  EXPECT_FALSE(t.lookup(1, at(150)));
}

TEST(SessionTable, ChangesAreRecordedOnlyWhileTracked) {
  SessionTableConfig config;
  config.max_entries = 2;
  SessionTable t(config);
  t.assign(1, 0, 10, at(0));
  EXPECT_TRUE(t.take_changes().changed.empty()) << "not tracking yet";
  t.track_changes(true);
  t.assign(2, 1, 20, at(1));
  t.touch(1, 15, at(2));
  auto c = t.take_changes();
  ASSERT_EQ(c.changed.size(), 2u);
  EXPECT_TRUE(c.removed.empty());
  std::sort(c.changed.begin(), c.changed.end(), [](auto& a, auto& b) { return a.key < b.key; });
  EXPECT_EQ(c.changed[0].entry.prompt_tokens, 15u);
  EXPECT_EQ(c.changed[0].entry.last_seen, at(2));
  EXPECT_EQ(c.changed[1].entry.home, 1u);
  EXPECT_TRUE(t.take_changes().changed.empty()) << "taken once";

  t.assign(3, 0, 30, at(3));  // evicts 2, the least recently seen
  EXPECT_TRUE(t.erase(1));
  c = t.take_changes();
  ASSERT_EQ(c.changed.size(), 1u);
  EXPECT_EQ(c.changed[0].key, 3u);
  std::sort(c.removed.begin(), c.removed.end());
  EXPECT_EQ(c.removed, (std::vector<std::uint64_t>{1, 2}));

  t.erase(3);
  t.assign(3, 1, 31, at(4));  // removed, then back: reported as changed only
  c = t.take_changes();
  EXPECT_TRUE(c.removed.empty());
  ASSERT_EQ(c.changed.size(), 1u);
  EXPECT_EQ(c.changed[0].entry.home, 1u);

  const std::vector<SessionRecord> stored{{9, {0, 90, at(4)}}, {8, {0, 80, at(4)}}};
  t.import_entries(stored, at(4));  // three entries for two places: 3 goes
  c = t.take_changes();
  EXPECT_TRUE(c.changed.empty()) << "imported entries are stored already";
  EXPECT_EQ(c.removed.size(), 1u) << "but the eviction an import causes is a change";
}

TEST(SessionTable, AChangedEntryAnImportDropsIsReportedRemoved) {
  SessionTableConfig config;
  config.idle_ttl = seconds(100);
  SessionTable t(config);
  t.track_changes(true);
  t.assign(1, 0, 10, at(0));
  t.import_entries({}, at(101));  // the rebuild keeps live entries only
  const auto c = t.take_changes();
  EXPECT_TRUE(c.changed.empty());
  EXPECT_EQ(c.removed, (std::vector<std::uint64_t>{1}));
}

// Another warden's conversation, found in the shared state before its first request here, goes in
// without rebuilding the table (an import rebuilt it for every such lookup, and lost every computed mark).
TEST(SessionTable, ALearnedHomeGoesInAloneKeepingEveryOtherEntry) {
  SessionTable t(fixed_minute_window());
  t.track_changes(true);
  t.assign(1, 0, 10, at(0));
  t.mark_computed(1, 5000);
  (void)t.take_changes();
  EXPECT_TRUE(t.learn(2, 3, 20, at(5)));
  EXPECT_EQ(t.lookup(2, at(5))->home, 3u);
  EXPECT_EQ(t.lookup(2, at(5))->last_seen, at(5));
  EXPECT_EQ(t.replica(3).active_conversations, 1u);
  EXPECT_EQ(t.replica(3).held_tokens, 20u);
  EXPECT_EQ(t.lookup(1, at(5))->home_computed_at, 5000u) << "the other entries keep their marks";
  EXPECT_TRUE(t.take_changes().changed.empty()) << "learned from the shared state: nothing to publish";
  EXPECT_FALSE(t.learn(1, 2, 99, at(6))) << "a conversation known here keeps its own home";
  EXPECT_EQ(t.lookup(1, at(6))->home, 0u);
  EXPECT_EQ(t.lookup(1, at(6))->prompt_tokens, 10u);
}

// Several wardens: a conversation whose latest turn another warden had counts in that warden's load, not
// in this one's, until this warden routes it again.
TEST(SessionTable, AConversationSeenElsewhereLeavesTheAggregatesUntilItsNextTurnHere) {
  SessionTable t(fixed_minute_window());
  t.track_changes(true);
  t.assign(1, 2, 1000, at(0));
  t.mark_computed(1, 700);
  t.assign(2, 2, 500, at(1));
  (void)t.take_changes();
  EXPECT_FALSE(t.seen_elsewhere(1, 3, 900, at(5))) << "another home: the keep-alive adopts it instead";
  EXPECT_FALSE(t.seen_elsewhere(9, 2, 900, at(5))) << "unknown here";
  ASSERT_TRUE(t.seen_elsewhere(1, 2, 900, at(5)));
  EXPECT_EQ(t.replica(2).active_conversations, 1u);
  EXPECT_EQ(t.replica(2).held_tokens, 500u);
  EXPECT_EQ(t.active_size(), 2u) << "still live, counted by the other warden";
  EXPECT_EQ(t.lookup(1, at(5))->last_seen, at(5));
  EXPECT_EQ(t.lookup(1, at(5))->home_computed_at, 900u) << "the newer mark";
  EXPECT_TRUE(t.take_changes().changed.empty()) << "nothing of this warden's to publish";
  t.seen_elsewhere(1, 2, 800, at(6));
  EXPECT_EQ(t.lookup(1, at(6))->home_computed_at, 900u) << "an older mark does not win";

  t.expire(at(100));  // out of the active window and back: still not counted here
  EXPECT_EQ(t.replica(2).active_conversations, 0u);
  t.touch(1, 1200, at(101));
  EXPECT_EQ(t.replica(2).active_conversations, 1u) << "its turn here: counted here again";
  EXPECT_EQ(t.replica(2).held_tokens, 1200u);
  EXPECT_EQ(t.lookup(1, at(101))->home_computed_at, 900u);
}

TEST(SessionTable, AnImportKeepsTheComputedMarks) {
  SessionTable t;
  t.assign(1, 0, 10, at(0));
  t.mark_computed(1, 1234);
  const std::vector<SessionRecord> stored{{2, {1, 20, at(1)}}};
  t.import_entries(stored, at(2));
  EXPECT_EQ(t.lookup(1, at(2))->home_computed_at, 1234u);
  EXPECT_EQ(t.lookup(2, at(2))->home_computed_at, SessionEntry::unknown);
  EXPECT_EQ(t.export_entries(at(2)).back().entry.home_computed_at, SessionEntry::unknown);
  EXPECT_EQ(t.export_entries(at(2)).front().entry.home_computed_at, 1234u);
}

TEST(SessionTable, MemoryPerLiveSessionIsSmall) {
  SessionTable t;
  constexpr std::uint64_t sessions = 100'000;
  for (std::uint64_t k = 0; k < sessions; ++k) {
    t.assign(k * 0x9E3779B97F4A7C15ULL, static_cast<ReplicaIndex>(k % 64), 8000, at(0));
  }
  EXPECT_LE(t.memory_bytes() / sessions, 256u);
}

}  // namespace
}  // namespace warden::core

namespace warden::core {
namespace {

// A reload relaid the replicas [0, 1, 2] as [2, gone, 0]: homes and aggregates move with their replica,
// the removed replica's conversation gets the gone index (not aggregated), and each move is a change.
TEST(SessionTableRemap, HomesAndAggregatesMoveWithTheirReplica) {
  SessionTable t;
  t.track_changes(true);
  t.assign(1, 0, 1000, seconds(0));
  t.assign(2, 1, 2000, seconds(0));
  t.assign(3, 2, 3000, seconds(0));
  t.assign(4, 70000, 10, seconds(0));  // no replica: must not become one
  (void)t.take_changes();
  const std::vector<std::optional<ReplicaIndex>> to{2u, std::nullopt, 0u};
  t.remap_homes(to, 65536);
  EXPECT_EQ(t.lookup(1, seconds(1))->home, 2u);
  EXPECT_EQ(t.lookup(2, seconds(1))->home, 65536u);
  EXPECT_EQ(t.lookup(3, seconds(1))->home, 0u);
  EXPECT_EQ(t.lookup(4, seconds(1))->home, 65536u);
  EXPECT_EQ(t.replica(0).held_tokens, 3000u);
  EXPECT_EQ(t.replica(1).held_tokens, 0u);
  EXPECT_EQ(t.replica(2).held_tokens, 1000u);
  EXPECT_EQ(t.take_changes().changed.size(), 4u);
}

}  // namespace
}  // namespace warden::core
