// Per-second token and request counts per model for the stats page, kept in memory for the retention window
// and persisted in SQLite so the history survives a restart. Time is always a parameter (unix seconds).
// Not thread-safe: owned by the gateway's I/O thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gateway/runtime/request_record.hpp"

struct sqlite3;

namespace warden::gateway {

// The system clock in whole seconds since the epoch, as the stats history is keyed.
std::int64_t unix_seconds_now();

struct StatsBucket {
  std::int64_t second = 0;  // unix time
  std::uint64_t prompt_cached = 0;
  std::uint64_t prompt_computed = 0;
  std::uint64_t completion = 0;
  std::uint64_t requests = 0;
  double ttfb_sum = 0;  // seconds
  std::uint64_t ttfb_count = 0;

  friend bool operator==(const StatsBucket&, const StatsBucket&) = default;
};

struct StatsSummary {
  std::uint64_t prompt_cached = 0;
  std::uint64_t prompt_computed = 0;
  std::uint64_t completion = 0;
  std::uint64_t requests = 0;
  double ttfb_sum = 0;
  std::uint64_t ttfb_count = 0;
  // cached / (cached + computed); std::nullopt when no prompt tokens were seen in the window.
  std::optional<double> cache_hit_rate() const;
  std::optional<double> ttfb_avg() const;
};

// A dense series: one bucket per second from `start` to `end` inclusive (zeros where nothing happened).
struct StatsSeries {
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::vector<StatsBucket> buckets;
  StatsSummary summary;
};

class StatsStore {
 public:
  explicit StatsStore(std::chrono::seconds retention) : retention_(retention.count()) {}

  void record(std::string_view model, std::int64_t now_s, const RequestRecord& r);
  // Adds a bucket read back from storage (merged with whatever is already there for that second).
  void restore(const std::string& model, const StatsBucket& b);
  // The last `window_s` seconds ending at `now_s`, dense.
  StatsSeries series(std::string_view model, std::int64_t now_s, std::int64_t window_s) const;
  // Drops buckets older than the retention window.
  void prune(std::int64_t now_s);
  // Buckets changed since the last call, with their full current values (for an idempotent upsert).
  std::vector<std::pair<std::string, StatsBucket>> take_dirty();
  std::vector<std::string> models() const;
  std::int64_t retention_s() const { return retention_; }

 private:
  std::int64_t retention_;
  std::map<std::string, std::map<std::int64_t, StatsBucket>, std::less<>> buckets_;
  std::set<std::pair<std::string, std::int64_t>> dirty_;
};

// SQLite file `stats.sqlite3` under state_dir (WAL: a crash loses no committed write). Errors are
// reported, never thrown.
class StatsDb {
 public:
  // Opens (creating the directory and schema if needed).
  static base::Result<std::unique_ptr<StatsDb>> open(const std::string& state_dir);
  ~StatsDb();
  StatsDb(const StatsDb&) = delete;
  StatsDb& operator=(const StatsDb&) = delete;

  base::Result<void> save(const std::vector<std::pair<std::string, StatsBucket>>& rows);
  // Every bucket at or after `since_s`.
  base::Result<std::vector<std::pair<std::string, StatsBucket>>> load_since(std::int64_t since_s);
  base::Result<void> prune_before(std::int64_t before_s);
  // The open database, for the routing state kept in the same file (routing_state.hpp).
  sqlite3* handle() const { return db_; }

 private:
  explicit StatsDb(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// Loads the retained history from `db` into `store`, then keeps both in step: flush() writes the dirty
// buckets and prunes both sides. Called by the gateway every few seconds and at shutdown.
base::Result<void> load_history(StatsDb& db, StatsStore& store, std::int64_t now_s);
base::Result<void> flush_history(StatsDb& db, StatsStore& store, std::int64_t now_s);

}  // namespace warden::gateway
