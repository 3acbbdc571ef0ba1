#include "gateway/stores/stats_store.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>

#include "gateway/stores/sqlite_util.hpp"

namespace warden::gateway {

std::int64_t unix_seconds_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<double> StatsSummary::cache_hit_rate() const {
  const std::uint64_t total = prompt_cached + prompt_computed;
  if (total == 0) {
    return std::nullopt;
  }
  return static_cast<double>(prompt_cached) / static_cast<double>(total);
}

std::optional<double> StatsSummary::ttfb_avg() const {
  if (ttfb_count == 0) {
    return std::nullopt;
  }
  return ttfb_sum / static_cast<double>(ttfb_count);
}

namespace {

void add_into(StatsBucket& into, const StatsBucket& b) {
  into.prompt_cached += b.prompt_cached;
  into.prompt_computed += b.prompt_computed;
  into.completion += b.completion;
  into.requests += b.requests;
  into.ttfb_sum += b.ttfb_sum;
  into.ttfb_count += b.ttfb_count;
}

}  // namespace

void StatsStore::record(std::string_view model, std::int64_t now_s, const RequestRecord& r) {
  auto it = buckets_.find(model);
  if (it == buckets_.end()) {
    it = buckets_.emplace(std::string(model), std::map<std::int64_t, StatsBucket>{}).first;
  }
  StatsBucket& b = it->second[now_s];
  b.second = now_s;
  b.prompt_cached += static_cast<std::uint64_t>(r.prompt_cached());
  b.prompt_computed += static_cast<std::uint64_t>(r.prompt_computed());
  b.completion += static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.completion_tokens.value_or(0)));
  b.requests += 1;
  if (r.ttfb_s) {
    b.ttfb_sum += *r.ttfb_s;
    b.ttfb_count += 1;
  }
  dirty_.emplace(it->first, now_s);
}

void StatsStore::restore(const std::string& model, const StatsBucket& b) {
  StatsBucket& into = buckets_[model][b.second];
  into.second = b.second;
  add_into(into, b);
}

StatsSeries StatsStore::series(std::string_view model, std::int64_t now_s, std::int64_t window_s) const {
  StatsSeries s;
  window_s = std::max<std::int64_t>(1, window_s);
  s.end = now_s;
  s.start = now_s - window_s + 1;
  s.buckets.resize(static_cast<std::size_t>(window_s));
  for (std::int64_t t = s.start; t <= s.end; ++t) {
    s.buckets[static_cast<std::size_t>(t - s.start)].second = t;
  }
  auto it = buckets_.find(model);
  if (it == buckets_.end()) {
    return s;
  }
  for (auto b = it->second.lower_bound(s.start); b != it->second.end() && b->first <= s.end; ++b) {
    s.buckets[static_cast<std::size_t>(b->first - s.start)] = b->second;
    s.summary.prompt_cached += b->second.prompt_cached;
    s.summary.prompt_computed += b->second.prompt_computed;
    s.summary.completion += b->second.completion;
    s.summary.requests += b->second.requests;
    s.summary.ttfb_sum += b->second.ttfb_sum;
    s.summary.ttfb_count += b->second.ttfb_count;
  }
  return s;
}

void StatsStore::prune(std::int64_t now_s) {
  const std::int64_t keep_from = now_s - retention_;
  for (auto& [model, m] : buckets_) {
    m.erase(m.begin(), m.lower_bound(keep_from));
  }
}

std::vector<std::pair<std::string, StatsBucket>> StatsStore::take_dirty() {
  std::vector<std::pair<std::string, StatsBucket>> out;
  out.reserve(dirty_.size());
  for (const auto& [model, second] : dirty_) {
    auto m = buckets_.find(model);
    if (m == buckets_.end()) {
      continue;
    }
    auto b = m->second.find(second);
    if (b != m->second.end()) {
      out.emplace_back(model, b->second);
    }
  }
  dirty_.clear();
  return out;
}

std::vector<std::string> StatsStore::models() const {
  std::vector<std::string> out;
  for (const auto& [name, m] : buckets_) {
    out.push_back(name);
  }
  return out;
}

namespace {

constexpr const char* kStatsSchema =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS stats_second ("
    " model TEXT NOT NULL, second INTEGER NOT NULL,"
    " prompt_cached INTEGER NOT NULL, prompt_computed INTEGER NOT NULL, completion INTEGER NOT NULL,"
    " requests INTEGER NOT NULL, ttfb_sum REAL NOT NULL, ttfb_count INTEGER NOT NULL,"
    " PRIMARY KEY (model, second)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS stats_second_time ON stats_second(second);";

// The database at `path` with its schema; `damaged` says the file is not a database or a damaged one.
base::Result<sqlite3*> open_with_schema(const std::string& path, bool& damaged) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string why = sqlite_error(db, fmt::format("cannot open {}", path));
    sqlite3_close(db);
    return base::Failure{std::move(why)};
  }
  sqlite3_busy_timeout(db, 2000);
  char* msg = nullptr;
  if (const int rc = sqlite3_exec(db, kStatsSchema, nullptr, nullptr, &msg); rc != SQLITE_OK) {
    damaged = (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT;
    std::string why = fmt::format("cannot create the stats schema in {}: {}", path, msg ? msg : "?");
    sqlite3_free(msg);
    sqlite3_close(db);
    return base::Failure{std::move(why)};
  }
  return db;
}

// A damaged database moved aside with its WAL and shared-memory files (kept for inspection); the new name.
base::Result<std::string> move_aside(const std::string& path, std::int64_t unix_now) {
  const std::string aside = fmt::format("{}.damaged-{}", path, unix_now);
  std::error_code ec;
  std::filesystem::rename(path, aside, ec);
  if (ec) {
    return base::Failure{fmt::format("cannot move {} aside: {}", path, ec.message())};
  }
  for (const char* suffix : {"-wal", "-shm"}) {
    std::filesystem::rename(path + suffix, aside + suffix, ec);
  }
  return base::Result<std::string>(boost::system::in_place_value, aside);
}

}  // namespace

base::Result<std::unique_ptr<StatsDb>> StatsDb::open(const std::string& state_dir) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    return base::Failure{fmt::format("cannot create state_dir '{}': {}", state_dir, ec.message())};
  }
  const std::string path = (std::filesystem::path(state_dir) / "stats.sqlite3").string();
  bool damaged = false;
  auto db = open_with_schema(path, damaged);
  if (!db && damaged) {
    // What a damaged file held (stats history, homes, routing changes) is lost to this run either way; a
    // warden that refused to start over it would only loop under Restart=on-failure.
    const auto unix_now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    auto aside = move_aside(path, unix_now);
    if (!aside) {
      return base::Failure{fmt::format("{}; {}", db.error(), aside.error())};
    }
    spdlog::error("{} is damaged ({}): moved to {}; starting with an empty state database", path, db.error(),
                  *aside);
    db = open_with_schema(path, damaged);
  }
  if (!db) {
    return base::Failure{std::move(db.error())};
  }
  return std::unique_ptr<StatsDb>(new StatsDb(*db));
}

StatsDb::~StatsDb() {
  sqlite3_close(db_);
}

base::Result<void> StatsDb::save(const std::vector<std::pair<std::string, StatsBucket>>& rows) {
  if (rows.empty()) {
    return {};
  }
  Stmt st;
  const char* sql =
      "INSERT OR REPLACE INTO stats_second (model, second, prompt_cached, prompt_computed, completion, "
      "requests,"
      " ttfb_sum, ttfb_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
  if (sqlite3_prepare_v2(db_, sql, -1, &st.s, nullptr) != SQLITE_OK) {
    return base::Failure{sqlite_error(db_, "prepare save")};
  }
  Transaction tx(db_);
  for (const auto& [model, b] : rows) {
    sqlite3_bind_text(st.s, 1, model.data(), static_cast<int>(model.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st.s, 2, b.second);
    sqlite3_bind_int64(st.s, 3, static_cast<sqlite3_int64>(b.prompt_cached));
    sqlite3_bind_int64(st.s, 4, static_cast<sqlite3_int64>(b.prompt_computed));
    sqlite3_bind_int64(st.s, 5, static_cast<sqlite3_int64>(b.completion));
    sqlite3_bind_int64(st.s, 6, static_cast<sqlite3_int64>(b.requests));
    sqlite3_bind_double(st.s, 7, b.ttfb_sum);
    sqlite3_bind_int64(st.s, 8, static_cast<sqlite3_int64>(b.ttfb_count));
    if (sqlite3_step(st.s) != SQLITE_DONE) {
      return base::Failure{sqlite_error(db_, "save stats")};
    }
    sqlite3_reset(st.s);
  }
  return tx.commit();
}

base::Result<std::vector<std::pair<std::string, StatsBucket>>> StatsDb::load_since(std::int64_t since_s) {
  std::vector<std::pair<std::string, StatsBucket>> out;
  Stmt st;
  const char* sql =
      "SELECT model, second, prompt_cached, prompt_computed, completion, requests, ttfb_sum, ttfb_count"
      " FROM stats_second WHERE second >= ?1 ORDER BY model, second";
  if (sqlite3_prepare_v2(db_, sql, -1, &st.s, nullptr) != SQLITE_OK) {
    return base::Failure{sqlite_error(db_, "prepare load")};
  }
  sqlite3_bind_int64(st.s, 1, since_s);
  int rc = 0;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st.s, 0));
    StatsBucket b;
    b.second = sqlite3_column_int64(st.s, 1);
    auto u = [&](int col) {
      return static_cast<std::uint64_t>(std::max<sqlite3_int64>(0, sqlite3_column_int64(st.s, col)));
    };
    b.prompt_cached = u(2);
    b.prompt_computed = u(3);
    b.completion = u(4);
    b.requests = u(5);
    b.ttfb_sum = sqlite3_column_double(st.s, 6);
    b.ttfb_count = u(7);
    out.emplace_back(text ? text : "", b);
  }
  if (rc != SQLITE_DONE) {
    return base::Failure{sqlite_error(db_, "load stats")};
  }
  return out;
}

base::Result<void> StatsDb::prune_before(std::int64_t before_s) {
  Stmt st;
  if (sqlite3_prepare_v2(db_, "DELETE FROM stats_second WHERE second < ?1", -1, &st.s, nullptr) !=
      SQLITE_OK) {
    return base::Failure{sqlite_error(db_, "prepare prune")};
  }
  sqlite3_bind_int64(st.s, 1, before_s);
  if (sqlite3_step(st.s) != SQLITE_DONE) {
    return base::Failure{sqlite_error(db_, "prune stats")};
  }
  return {};
}

base::Result<void> load_history(StatsDb& db, StatsStore& store, std::int64_t now_s) {
  auto rows = db.load_since(now_s - store.retention_s());
  if (!rows) {
    return base::Failure{std::move(rows.error())};
  }
  for (const auto& [model, b] : *rows) {
    store.restore(model, b);
  }
  return {};
}

base::Result<void> flush_history(StatsDb& db, StatsStore& store, std::int64_t now_s) {
  store.prune(now_s);
  auto saved = db.save(store.take_dirty());
  // Prune even when the save failed: the retention bound holds whatever the disk did.
  auto pruned = db.prune_before(now_s - store.retention_s());
  return saved ? pruned : saved;
}

}  // namespace warden::gateway
