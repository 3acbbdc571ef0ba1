#include "gateway/stores/routing_state.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <boost/unordered/unordered_flat_map.hpp>
#include <chrono>
#include <optional>

#include "gateway/stores/sqlite_util.hpp"

namespace warden::gateway {

namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS session_home ("
    " model TEXT NOT NULL, key INTEGER NOT NULL, home INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL,"
    " last_seen_ms INTEGER NOT NULL, PRIMARY KEY (model, key)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS session_home_time ON session_home(model, last_seen_ms);"
    "CREATE TABLE IF NOT EXISTS routing_override ("
    " model TEXT PRIMARY KEY, routing TEXT NOT NULL, config_routing TEXT NOT NULL);";

// The table that kept affinity and the spill threshold alone (spill_threshold: "auto" or digits), moved into
// routing_override in their JSON spelling, then dropped.
constexpr const char* kMigrateRoutingChange =
    "INSERT OR REPLACE INTO routing_override (model, routing, config_routing) SELECT model,"
    " '{\"affinity\":' || CASE affinity WHEN 0 THEN 'false' ELSE 'true' END"
    "   || ',\"spill_threshold\":\"' || spill_threshold || '\"}',"
    " '{\"affinity\":' || CASE config_affinity WHEN 0 THEN 'false' ELSE 'true' END"
    "   || ',\"spill_threshold\":\"' || config_spill_threshold || '\"}'"
    " FROM routing_change;"
    "DROP TABLE routing_change;";

void bind_text(sqlite3_stmt* s, int col, const std::string& text) {
  sqlite3_bind_text(s, col, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

std::string column_text(sqlite3_stmt* s, int col) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
  return text ? text : "";
}

// Runs a prepared statement to its end.
base::Result<void> run(sqlite3* db, Stmt& st, std::string_view what) {
  const bool ok = sqlite3_step(st.s) == SQLITE_DONE;
  sqlite3_reset(st.s);
  if (!ok) {
    return base::Failure{sqlite_error(db, what)};
  }
  return {};
}

base::Result<void> prepare(sqlite3* db, Stmt& st, const char* sql) {
  if (sqlite3_prepare_v2(db, sql, -1, &st.s, nullptr) != SQLITE_OK) {
    return base::Failure{sqlite_error(db, "prepare")};
  }
  return {};
}

bool has_table(sqlite3* db, const char* name) {
  Stmt st;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st.s,
                         nullptr) != SQLITE_OK) {
    return false;
  }
  sqlite3_bind_text(st.s, 1, name, -1, SQLITE_STATIC);
  return sqlite3_step(st.s) == SQLITE_ROW;
}

base::Result<void> exec(sqlite3* db, const char* sql, std::string_view what) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string why = fmt::format("cannot {}: {}", what, msg ? msg : "?");
    sqlite3_free(msg);
    return base::Failure{std::move(why)};
  }
  return {};
}

}  // namespace

StoredHome ClockPair::to_stored(const core::SessionRecord& r) const {
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(steady - r.entry.last_seen).count();
  return {r.key, r.entry.home, r.entry.prompt_tokens, unix_ms - age};
}

core::SessionRecord ClockPair::to_record(const StoredHome& h) const {
  const core::Time age = std::chrono::milliseconds(unix_ms - h.last_seen_ms);
  return {h.key, {h.home, h.prompt_tokens, steady - age}};
}

namespace {

constexpr std::size_t kMaxKeptRemovals = 1'000'000;

void merge_model_changes(HomeChanges& into, const HomeChanges& later) {
  boost::unordered_flat_map<std::uint64_t, std::optional<StoredHome>> latest;
  for (const std::uint64_t key : into.removed) {
    latest[key] = std::nullopt;
  }
  for (const StoredHome& h : into.changed) {
    latest[h.key] = h;
  }
  for (const std::uint64_t key : later.removed) {
    latest[key] = std::nullopt;
  }
  for (const StoredHome& h : later.changed) {
    latest[h.key] = h;
  }
  into.changed.clear();
  into.removed.clear();
  for (const auto& [key, home] : latest) {
    if (home) {
      into.changed.push_back(*home);
    } else {
      into.removed.push_back(key);
    }
  }
  into.expire_before_ms = std::max(into.expire_before_ms, later.expire_before_ms);
  // A long outage of the disk under a flood of new conversations: the removals may go unwritten (a
  // removed home left stored is deleted by the expiry bound, or restored harmlessly), so they stay bounded.
  if (into.removed.size() > kMaxKeptRemovals) {
    into.removed.clear();
  }
}

}  // namespace

void merge_home_changes(std::vector<HomeChanges>& earlier, const std::vector<HomeChanges>& later) {
  for (const HomeChanges& c : later) {
    const auto same = std::find_if(earlier.begin(), earlier.end(),
                                   [&](const HomeChanges& e) { return e.model == c.model; });
    if (same == earlier.end()) {
      earlier.push_back(c);
    } else {
      merge_model_changes(*same, c);
    }
  }
}

std::vector<core::SessionRecord> homes_to_restore(const std::vector<StoredHome>& stored, int replica_count,
                                                  const ClockPair& now) {
  std::vector<core::SessionRecord> out;
  out.reserve(stored.size());
  for (const StoredHome& h : stored) {
    if (replica_count > 0 && h.home < static_cast<std::uint32_t>(replica_count)) {
      out.push_back(now.to_record(h));
    }
  }
  return out;
}

base::Result<RoutingStateDb> RoutingStateDb::open(sqlite3* db) {
  if (auto made = exec(db, kSchema, "create the routing state tables"); !made) {
    return base::Failure{std::move(made.error())};
  }
  if (has_table(db, "routing_change")) {
    Transaction tx(db);
    auto moved = exec(db, kMigrateRoutingChange, "move the stored routing changes over");
    if (moved) {
      moved = tx.commit();
    }
    if (!moved) {
      return base::Failure{std::move(moved.error())};
    }
  }
  return RoutingStateDb(db);
}

base::Result<void> RoutingStateDb::upsert_homes(const std::string& model,
                                                const std::vector<StoredHome>& homes) {
  Stmt st;
  auto done = prepare(db_, st,
                      "INSERT OR REPLACE INTO session_home (model, key, home, prompt_tokens, last_seen_ms)"
                      " VALUES (?1, ?2, ?3, ?4, ?5)");
  for (auto h = homes.begin(); done && h != homes.end(); ++h) {
    bind_text(st.s, 1, model);
    sqlite3_bind_int64(st.s, 2, std::bit_cast<sqlite3_int64>(h->key));
    sqlite3_bind_int64(st.s, 3, h->home);
    sqlite3_bind_int64(st.s, 4, h->prompt_tokens);
    sqlite3_bind_int64(st.s, 5, h->last_seen_ms);
    done = run(db_, st, "save a conversation home");
  }
  return done;
}

// One model's changes, inside the caller's transaction: upserts, then deletes, then expiry.
base::Result<void> RoutingStateDb::apply_changes(const HomeChanges& c, Stmt& del, Stmt& expire) {
  auto done = upsert_homes(c.model, c.changed);
  for (auto key = c.removed.begin(); done && key != c.removed.end(); ++key) {
    bind_text(del.s, 1, c.model);
    sqlite3_bind_int64(del.s, 2, std::bit_cast<sqlite3_int64>(*key));
    done = run(db_, del, "forget a conversation home");
  }
  if (done) {
    bind_text(expire.s, 1, c.model);
    sqlite3_bind_int64(expire.s, 2, c.expire_before_ms);
    done = run(db_, expire, "delete expired conversation homes");
  }
  return done;
}

base::Result<void> RoutingStateDb::save_homes(const std::vector<HomeChanges>& changes) {
  Stmt del;
  Stmt expire;
  auto done = prepare(db_, del, "DELETE FROM session_home WHERE model = ?1 AND key = ?2");
  if (done) {
    done = prepare(db_, expire, "DELETE FROM session_home WHERE model = ?1 AND last_seen_ms < ?2");
  }
  Transaction tx(db_);
  for (auto c = changes.begin(); done && c != changes.end(); ++c) {
    done = apply_changes(*c, del, expire);
  }
  return done ? tx.commit() : done;
}

base::Result<void> RoutingStateDb::replace_homes(
    const std::vector<std::pair<std::string, std::vector<StoredHome>>>& homes) {
  Transaction tx(db_);
  if (sqlite3_exec(db_, "DELETE FROM session_home", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return base::Failure{sqlite_error(db_, "clear conversation homes")};
  }
  base::Result<void> done;
  for (auto m = homes.begin(); done && m != homes.end(); ++m) {
    done = upsert_homes(m->first, m->second);
  }
  return done ? tx.commit() : done;
}

base::Result<std::vector<StoredHome>> RoutingStateDb::load_homes(const std::string& model) {
  Stmt st;
  if (auto ready = prepare(db_, st,
                           "SELECT key, home, prompt_tokens, last_seen_ms FROM session_home WHERE model = ?1"
                           " ORDER BY last_seen_ms");
      !ready) {
    return base::Failure{std::move(ready.error())};
  }
  bind_text(st.s, 1, model);
  std::vector<StoredHome> out;
  int rc = 0;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    const auto u32 = [&](int col) {
      return static_cast<std::uint32_t>(
          std::clamp<sqlite3_int64>(sqlite3_column_int64(st.s, col), 0, 0xFFFFFFFF));
    };
    out.push_back({std::bit_cast<std::uint64_t>(sqlite3_column_int64(st.s, 0)), u32(1), u32(2),
                   sqlite3_column_int64(st.s, 3)});
  }
  if (rc != SQLITE_DONE) {
    return base::Failure{sqlite_error(db_, "load conversation homes")};
  }
  return out;
}

base::Result<void> RoutingStateDb::save_routing(const StoredRouting& r) {
  Stmt st;
  auto done = prepare(db_, st,
                      "INSERT OR REPLACE INTO routing_override (model, routing, config_routing)"
                      " VALUES (?1, ?2, ?3)");
  if (done) {
    bind_text(st.s, 1, r.model);
    bind_text(st.s, 2, r.routing);
    bind_text(st.s, 3, r.config_routing);
    done = run(db_, st, "save a routing change");
  }
  return done;
}

base::Result<void> RoutingStateDb::forget_routing(const std::string& model) {
  Stmt st;
  auto done = prepare(db_, st, "DELETE FROM routing_override WHERE model = ?1");
  if (done) {
    bind_text(st.s, 1, model);
    done = run(db_, st, "forget a routing change");
  }
  return done;
}

base::Result<std::optional<StoredRouting>> RoutingStateDb::load_routing(const std::string& model) {
  Stmt st;
  if (auto ready = prepare(db_, st, "SELECT routing, config_routing FROM routing_override WHERE model = ?1");
      !ready) {
    return base::Failure{std::move(ready.error())};
  }
  bind_text(st.s, 1, model);
  switch (sqlite3_step(st.s)) {
    case SQLITE_ROW:
      return std::optional<StoredRouting>(StoredRouting{model, column_text(st.s, 0), column_text(st.s, 1)});
    case SQLITE_DONE:
      return std::optional<StoredRouting>();
    default:
      return base::Failure{sqlite_error(db_, "load a routing change")};
  }
}

}  // namespace warden::gateway
