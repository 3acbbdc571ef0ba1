// What outlives a restart, against a disk that fails: a write that fails keeps its homes for the next one,
// one warden holds a state directory, and a damaged database is moved aside rather than stopping the start.
#include "gateway/stores/durable_state.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "support/temp_dir.hpp"

using namespace warden::gateway;
using test_support::TempDir;

namespace {

// A second connection to the state database, as another process would hold it.
class Peer {
 public:
  explicit Peer(const TempDir& dir) {
    EXPECT_EQ(sqlite3_open((dir.path / "stats.sqlite3").c_str(), &db_), SQLITE_OK);
  }
  ~Peer() { sqlite3_close(db_); }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  void exec(const char* sql) {
    ASSERT_EQ(sqlite3_exec(db_, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  }
  std::set<std::int64_t> keys() {
    std::set<std::int64_t> out;
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, "SELECT key FROM session_home", -1, &st, nullptr), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
      out.insert(sqlite3_column_int64(st, 0));
    }
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

HomeChanges changed(std::vector<std::uint64_t> keys, std::vector<std::uint64_t> removed = {}) {
  HomeChanges c{"m", {}, std::move(removed), 0};
  for (const std::uint64_t k : keys) {
    c.changed.push_back({k, 1, 100, 1'800'000'000'000});
  }
  return c;
}

}  // namespace

// Homes changed while the table could not be written (a full disk, here a table gone): the write fails,
// its changes are kept, and the next write stores them with its own.
TEST(DurableState, AFailedWriteKeepsItsHomesForTheNext) {
  TempDir dir;
  StatsStore stats(std::chrono::seconds(3600));
  DurableState state;
  ASSERT_TRUE(state.open(dir.path.string(), stats, 1'800'000'000));
  Peer peer(dir);
  state.flush(stats, 1'800'000'000, {changed({1, 2})});
  ASSERT_EQ(peer.keys(), (std::set<std::int64_t>{1, 2}));
  peer.exec("DROP TABLE session_home");
  state.flush(stats, 1'800'000'001, {changed({3, 4}, {1})});
  peer.exec(
      "CREATE TABLE session_home (model TEXT NOT NULL, key INTEGER NOT NULL, home INTEGER NOT NULL,"
      " prompt_tokens INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL, PRIMARY KEY (model, key)) WITHOUT "
      "ROWID;"
      "INSERT INTO session_home VALUES ('m', 1, 0, 10, 1800000000000)");
  state.flush(stats, 1'800'000'002, {changed({5}, {4})});
  EXPECT_EQ(peer.keys(), (std::set<std::int64_t>{3, 5})) << "1 and 4 removed, 3 and 5 written";
}

// The merge of a failed write's changes with the next: a key's latest change or removal wins.
TEST(DurableState, ChangesMergeKeyByKey) {
  std::vector<HomeChanges> earlier{changed({1, 2}, {3})};
  merge_home_changes(earlier, {changed({3}, {2}), HomeChanges{"other", {}, {9}, 5}});
  ASSERT_EQ(earlier.size(), 2u);
  std::set<std::uint64_t> kept;
  for (const StoredHome& h : earlier[0].changed) {
    kept.insert(h.key);
  }
  EXPECT_EQ(kept, (std::set<std::uint64_t>{1, 3}));
  EXPECT_EQ(earlier[0].removed, std::vector<std::uint64_t>{2});
  EXPECT_EQ(earlier[1].model, "other");
}

// A second warden on the same state directory is refused, naming the first one's pid; once the first is
// gone the directory is free.
TEST(DurableState, OneWardenHoldsAStateDirectory) {
  TempDir dir;
  StatsStore stats(std::chrono::seconds(3600));
  {
    DurableState first;
    ASSERT_TRUE(first.open(dir.path.string(), stats, 1'800'000'000));
    DurableState second;
    const auto refused = second.open(dir.path.string(), stats, 1'800'000'000);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("in use by another warden (pid " + std::to_string(::getpid()) + ")"),
              std::string::npos)
        << refused.error();
  }
  DurableState again;
  EXPECT_TRUE(again.open(dir.path.string(), stats, 1'800'000'000));
}

// A stats.sqlite3 that is not a database: moved aside (kept for a look), and the warden starts with an
// empty one.
TEST(DurableState, ADamagedDatabaseIsMovedAsideAndTheStartGoesOn) {
  TempDir dir;
  std::ofstream(dir.path / "stats.sqlite3") << std::string(8192, 'x');
  StatsStore stats(std::chrono::seconds(3600));
  DurableState state;
  const auto opened = state.open(dir.path.string(), stats, 1'800'000'000);
  ASSERT_TRUE(opened) << opened.error();
  int aside = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    aside += entry.path().filename().string().starts_with("stats.sqlite3.damaged-") ? 1 : 0;
  }
  EXPECT_EQ(aside, 1);
  state.flush(stats, 1'800'000'000, {changed({7})});
  Peer peer(dir);
  EXPECT_EQ(peer.keys(), (std::set<std::int64_t>{7}));
}
