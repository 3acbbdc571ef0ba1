// Routing state that outlives the process, kept beside the stats in the state database: every
// conversation's home (written in batches of what changed) and the routing changes made through the admin
// API. The session table runs on the steady clock; the database keeps unix milliseconds, so a restart
// (a new steady epoch) reads the same ages back. Errors are reported, never thrown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "core/session_table.hpp"
#include "core/types.hpp"

struct sqlite3;

namespace warden::gateway {

struct Stmt;

// One conversation's home as stored.
struct StoredHome {
  std::uint64_t key = 0;
  std::uint32_t home = 0;
  std::uint32_t prompt_tokens = 0;
  std::int64_t last_seen_ms = 0;  // unix

  friend bool operator==(const StoredHome&, const StoredHome&) = default;
};

// What one model's session table changed since the last write, and how old a home may be and still live.
struct HomeChanges {
  std::string model;
  std::vector<StoredHome> changed;
  std::vector<std::uint64_t> removed;
  std::int64_t expire_before_ms = 0;  // unix: older homes are deleted
};

// A model's routing as the admin API last left it, the whole core::RoutingConfig, with the config file's
// routing at the time: a config edited since then (other values) wins over the stored change. Both in
// their JSON spelling (settings/routing.hpp); a value written before every knob was kept holds
// only affinity and spill_threshold.
struct StoredRouting {
  std::string model;
  std::string routing;
  std::string config_routing;

  friend bool operator==(const StoredRouting&, const StoredRouting&) = default;
};

// The two clocks read at one moment: converts the session table's times to unix milliseconds and back.
struct ClockPair {
  core::Time steady{};
  std::int64_t unix_ms = 0;

  StoredHome to_stored(const core::SessionRecord& r) const;
  core::SessionRecord to_record(const StoredHome& h) const;
};

// `later` changes on top of `earlier` ones (a write that failed keeps its changes for the next): per model,
// a key's latest change or removal wins, and the later expiry bound. O(size of both).
void merge_home_changes(std::vector<HomeChanges>& earlier, const std::vector<HomeChanges>& later);

// The homes of a model now served by `replica_count` replicas: those whose home no longer exists go.
std::vector<core::SessionRecord> homes_to_restore(const std::vector<StoredHome>& stored, int replica_count,
                                                  const ClockPair& now);

// Statements over an open state database (StatsDb::handle()).
class RoutingStateDb {
 public:
  // Creates the tables if needed, and moves routing changes stored in the older two-knob table over.
  static base::Result<RoutingStateDb> open(sqlite3* db);

  // Every model's changes in one transaction (upserts, deletes, expiry).
  base::Result<void> save_homes(const std::vector<HomeChanges>& changes);
  // Replaces every stored home by `homes` (what the restored tables hold, after a start), in one
  // transaction: homes of models no longer configured or of replicas no longer there are gone after it.
  base::Result<void> replace_homes(const std::vector<std::pair<std::string, std::vector<StoredHome>>>& homes);
  // The stored homes of `model`.
  base::Result<std::vector<StoredHome>> load_homes(const std::string& model);

  base::Result<void> save_routing(const StoredRouting& routing);
  // The stored change of `model`, nullopt if there is none.
  base::Result<std::optional<StoredRouting>> load_routing(const std::string& model);
  base::Result<void> forget_routing(const std::string& model);

 private:
  explicit RoutingStateDb(sqlite3* db) : db_(db) {}
  base::Result<void> upsert_homes(const std::string& model, const std::vector<StoredHome>& homes);
  base::Result<void> apply_changes(const HomeChanges& changes, Stmt& del, Stmt& expire);
  sqlite3* db_;
};

}  // namespace warden::gateway
