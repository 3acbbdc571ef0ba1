#include "gateway/stores/routing_state.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "gateway/stores/stats_store.hpp"
#include "support/temp_dir.hpp"

using namespace warden::gateway;
using std::chrono::seconds;
using test_support::TempDir;

TEST(RoutingState, AgesSurviveANewSteadyEpoch) {
  // Written by a process whose steady clock read 500 s, read back by one whose clock reads 20 s.
  const ClockPair before{seconds(500), 1'800'000'000'000};
  const warden::core::SessionRecord r{42, {3, 7000, seconds(470)}};  // seen 30 s ago
  const StoredHome h = before.to_stored(r);
  EXPECT_EQ(h.last_seen_ms, 1'800'000'000'000 - 30'000);
  const ClockPair after{seconds(20), 1'800'000'060'000};  // one minute later
  const auto back = after.to_record(h);
  EXPECT_EQ(back.key, 42u);
  EXPECT_EQ(back.entry.home, 3u);
  EXPECT_EQ(back.entry.prompt_tokens, 7000u);
  EXPECT_EQ(back.entry.last_seen, seconds(20) - seconds(90)) << "90 s old, whatever the epoch";
}

TEST(RoutingState, HomesOnReplicasNoLongerThereAreDropped) {
  const ClockPair now{seconds(100), 1'000'000};
  const std::vector<StoredHome> stored{{1, 0, 10, 999'000}, {2, 3, 20, 999'000}, {3, 1, 30, 999'000}};
  const auto kept = homes_to_restore(stored, 2, now);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].key, 1u);
  EXPECT_EQ(kept[1].key, 3u);
  EXPECT_TRUE(homes_to_restore(stored, 0, now).empty());
}

namespace {

// The stored homes of `model`, failing the test on a read error.
std::vector<StoredHome> homes_of(RoutingStateDb& db, const std::string& model) {
  auto homes = db.load_homes(model);
  EXPECT_TRUE(homes) << homes.error();
  return homes ? *homes : std::vector<StoredHome>{};
}

std::optional<StoredRouting> routing_of(RoutingStateDb& db, const std::string& model) {
  auto routing = db.load_routing(model);
  EXPECT_TRUE(routing) << routing.error();
  return routing ? *routing : std::nullopt;
}

}  // namespace

TEST(RoutingState, HomesAndRoutingChangesRoundTripThroughTheDatabase) {
  TempDir dir;
  auto stats = StatsDb::open(dir.path.string());
  ASSERT_TRUE(stats) << stats.error();
  auto opened = RoutingStateDb::open((*stats)->handle());
  ASSERT_TRUE(opened) << opened.error();
  RoutingStateDb& db = *opened;

  const StoredHome big_key{0xFFFF'FFFF'FFFF'FFF0ull, 1, 100, 5'000};  // above INT64_MAX: bit-cast
  ASSERT_TRUE(db.save_homes({{"m", {big_key, {2, 0, 200, 9'000}, {3, 1, 300, 1'000}}, {}, 0}}));
  EXPECT_EQ(homes_of(db, "m").size(), 3u);
  // Next batch: one changed, one forgotten, one too old.
  ASSERT_TRUE(db.save_homes({{"m", {{2, 1, 250, 9'500}}, {3}, 4'000}}));
  auto homes = homes_of(db, "m");
  ASSERT_EQ(homes.size(), 2u);
  EXPECT_EQ(homes[0], big_key) << "oldest first";
  EXPECT_EQ(homes[1], (StoredHome{2, 1, 250, 9'500}));
  ASSERT_TRUE(db.save_homes({{"m", {}, {}, 6'000}}));
  EXPECT_EQ(homes_of(db, "m").size(), 1u);

  ASSERT_TRUE(db.replace_homes({{"other", {{7, 0, 1, 1}}}}));
  EXPECT_TRUE(homes_of(db, "m").empty());
  EXPECT_EQ(homes_of(db, "other").size(), 1u);

  EXPECT_FALSE(routing_of(db, "m"));
  const StoredRouting change{"m", R"({"affinity":false})", R"({"affinity":true})"};
  ASSERT_TRUE(db.save_routing(change));
  EXPECT_EQ(routing_of(db, "m"), change);
  ASSERT_TRUE(db.forget_routing("m"));
  EXPECT_FALSE(routing_of(db, "m"));
}

TEST(RoutingState, AReadOfABrokenDatabaseFailsRatherThanReadingAsNothingStored) {
  TempDir dir;
  auto stats = StatsDb::open(dir.path.string());
  ASSERT_TRUE(stats) << stats.error();
  auto db = RoutingStateDb::open((*stats)->handle());
  ASSERT_TRUE(db) << db.error();
  ASSERT_EQ(sqlite3_exec((*stats)->handle(), "DROP TABLE routing_override; DROP TABLE session_home", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  EXPECT_FALSE(db->load_routing("m"));
  EXPECT_FALSE(db->load_homes("m"));
  auto saved = db->save_homes({{"m", {{1, 0, 1, 1}}, {}, 0}});
  ASSERT_FALSE(saved);
  EXPECT_NE(saved.error().find("prepare"), std::string::npos) << saved.error();
}

TEST(RoutingState, ChangesStoredInTheTwoKnobTableAreMovedOver) {
  TempDir dir;
  auto stats = StatsDb::open(dir.path.string());
  ASSERT_TRUE(stats) << stats.error();
  sqlite3* handle = (*stats)->handle();
  // The table as an older warden left it.
  ASSERT_EQ(
      sqlite3_exec(handle,
                   "CREATE TABLE routing_change (model TEXT PRIMARY KEY, affinity INTEGER NOT NULL,"
                   " spill_threshold TEXT NOT NULL, config_affinity INTEGER NOT NULL,"
                   " config_spill_threshold TEXT NOT NULL);"
                   "INSERT INTO routing_change VALUES ('m', 0, '4', 1, 'auto'), ('n', 1, 'auto', 0, '7');",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  auto db = RoutingStateDb::open(handle);
  ASSERT_TRUE(db) << db.error();
  EXPECT_EQ(routing_of(*db, "m"), (StoredRouting{"m", R"({"affinity":false,"spill_threshold":"4"})",
                                                 R"({"affinity":true,"spill_threshold":"auto"})"}));
  EXPECT_EQ(routing_of(*db, "n"), (StoredRouting{"n", R"({"affinity":true,"spill_threshold":"auto"})",
                                                 R"({"affinity":false,"spill_threshold":"7"})"}));
  // Opened again (the next start): nothing left to move, nothing lost.
  db = RoutingStateDb::open(handle);
  ASSERT_TRUE(db) << db.error();
  EXPECT_TRUE(routing_of(*db, "m").has_value());
}
