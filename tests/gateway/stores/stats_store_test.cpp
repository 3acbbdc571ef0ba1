#include "gateway/stores/stats_store.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

using namespace warden::gateway;

namespace {

RequestRecord usage(std::int64_t prompt, std::optional<std::int64_t> cached, std::int64_t completion,
                    std::optional<double> ttfb) {
  RequestRecord r;
  r.model = "m";
  r.prompt_tokens = prompt;
  r.cached_tokens = cached;
  r.completion_tokens = completion;
  r.ttfb_s = ttfb;
  return r;
}

using test_support::TempDir;

}  // namespace

TEST(StatsStore, BucketsPerSecondAndCountsMissingCachedAsComputed) {
  StatsStore s(std::chrono::seconds(3600));
  s.record("m", 1000, usage(100, 80, 10, 0.5));
  s.record("m", 1000, usage(50, std::nullopt, 5, std::nullopt));  // engine did not measure: computed
  s.record("m", 1002, usage(30, 30, 1, 0.25));
  s.record("other", 1001, usage(7, 0, 0, 1.0));

  auto series = s.series("m", 1002, 5);
  EXPECT_EQ(series.start, 998);
  EXPECT_EQ(series.end, 1002);
  ASSERT_EQ(series.buckets.size(), 5u);
  const auto& b = series.buckets[2];
  EXPECT_EQ(b.second, 1000);
  EXPECT_EQ(b.prompt_cached, 80u);
  EXPECT_EQ(b.prompt_computed, 70u);
  EXPECT_EQ(b.completion, 15u);
  EXPECT_EQ(b.requests, 2u);
  EXPECT_DOUBLE_EQ(b.ttfb_sum, 0.5);
  EXPECT_EQ(b.ttfb_count, 1u);
  EXPECT_EQ(series.buckets[3].requests, 0u);  // dense: the other model's second is not here
  EXPECT_EQ(series.buckets[3].second, 1001);
  EXPECT_EQ(series.buckets[4].prompt_cached, 30u);
  EXPECT_EQ(series.summary.requests, 3u);
  EXPECT_EQ(series.summary.prompt_cached, 110u);
  EXPECT_EQ(series.summary.prompt_computed, 70u);
  EXPECT_DOUBLE_EQ(*series.summary.cache_hit_rate(), 110.0 / 180.0);
  EXPECT_DOUBLE_EQ(*series.summary.ttfb_avg(), 0.375);
}

TEST(StatsStore, EmptyWindowHasNoHitRate) {
  StatsStore s(std::chrono::seconds(3600));
  s.record("m", 10, usage(100, 100, 1, 0.1));
  auto series = s.series("m", 5000, 60);
  EXPECT_EQ(series.summary.requests, 0u);
  EXPECT_FALSE(series.summary.cache_hit_rate().has_value());
  EXPECT_FALSE(s.series("unknown", 5000, 60).summary.ttfb_avg().has_value());
}

TEST(StatsStore, NegativeOrInconsistentUsageNeverUnderflows) {
  StatsStore s(std::chrono::seconds(3600));
  s.record("m", 1, usage(10, 50, -4, std::nullopt));  // cached > prompt: an engine bug must not wrap around
  auto b = s.series("m", 1, 1).buckets[0];
  EXPECT_EQ(b.prompt_cached, 50u);
  EXPECT_EQ(b.prompt_computed, 0u);
  EXPECT_EQ(b.completion, 0u);
}

TEST(StatsStore, PrunesBeyondRetention) {
  StatsStore s(std::chrono::seconds(100));
  s.record("m", 1000, usage(1, 0, 0, std::nullopt));
  s.record("m", 1090, usage(2, 0, 0, std::nullopt));
  s.prune(1150);
  auto series = s.series("m", 1150, 200);
  EXPECT_EQ(series.summary.prompt_computed, 2u);
}

TEST(StatsStore, PersistsAcrossRestart) {
  TempDir dir;
  {
    auto db = StatsDb::open(dir.path.string());
    ASSERT_TRUE(db) << db.error();
    StatsStore s(std::chrono::seconds(3600));
    s.record("m", 5000, usage(100, 60, 9, 0.2));
    auto flushed = flush_history(**db, s, 5000);
    ASSERT_TRUE(flushed) << flushed.error();
    s.record("m", 5000, usage(10, 10, 1, 0.4));  // the same second again: upsert, not duplicate
    s.record("m", 5001, usage(5, 0, 1, std::nullopt));
    flushed = flush_history(**db, s, 5001);
    ASSERT_TRUE(flushed) << flushed.error();
    EXPECT_TRUE(s.take_dirty().empty());
  }
  auto opened = StatsDb::open(dir.path.string());
  ASSERT_TRUE(opened) << opened.error();
  StatsDb& db = **opened;
  StatsStore restored(std::chrono::seconds(3600));
  auto loaded = load_history(db, restored, 5010);
  ASSERT_TRUE(loaded) << loaded.error();
  auto series = restored.series("m", 5010, 60);
  EXPECT_EQ(series.summary.requests, 3u);
  EXPECT_EQ(series.summary.prompt_cached, 70u);
  EXPECT_EQ(series.summary.prompt_computed, 45u);
  EXPECT_EQ(series.summary.completion, 11u);
  EXPECT_NEAR(series.summary.ttfb_sum, 0.6, 1e-9);

  // Rows older than the retention window are not loaded, and flushing deletes them.
  StatsStore later(std::chrono::seconds(3600));
  ASSERT_TRUE(load_history(db, later, 5000 + 3601 + 1));
  EXPECT_EQ(later.series("m", 8602, 3600).summary.requests, 0u);
  ASSERT_TRUE(flush_history(db, later, 9000));
  auto left = db.load_since(0);
  ASSERT_TRUE(left) << left.error();
  EXPECT_TRUE(left->empty());
}

TEST(StatsStore, UnusableStateDirIsReported) {
  auto db = StatsDb::open("/proc/warden-cannot-write-here");
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().find("state_dir"), std::string::npos) << db.error();
}

TEST(StatsStore, AFailedWriteIsReportedAndTheRetentionStillApplies) {
  TempDir dir;
  auto opened = StatsDb::open(dir.path.string());
  ASSERT_TRUE(opened) << opened.error();
  StatsDb& db = **opened;
  ASSERT_EQ(sqlite3_exec(db.handle(), "DROP TABLE stats_second", nullptr, nullptr, nullptr), SQLITE_OK);
  StatsStore s(std::chrono::seconds(3600));
  s.record("m", 5000, usage(100, 60, 9, 0.2));
  auto flushed = flush_history(db, s, 5000);
  ASSERT_FALSE(flushed);
  EXPECT_NE(flushed.error().find("stats_second"), std::string::npos) << flushed.error();
  EXPECT_FALSE(db.load_since(0)) << "a read of a broken database fails, it does not read as empty";
}
