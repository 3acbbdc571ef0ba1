// What the gateway keeps across restarts, in state_dir/stats.sqlite3: the per-second stats history
// (stats_store.hpp), every conversation's home and the routing changes made through the admin API
// (routing_state.hpp). Opened and read back at start, written by flush() every second and at shutdown.
// Errors are logged and the gateway goes on: only a state directory that cannot be opened stops it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gateway/runtime/model_runtime.hpp"
#include "gateway/stores/routing_state.hpp"
#include "gateway/stores/stats_store.hpp"

namespace warden::gateway {

// The steady and the system clock read now.
ClockPair clocks_now();

// The state directory held by one warden (an advisory lock on state_dir/lock, released when the process
// ends, however it ends): a second warden on the same directory would overwrite the first's homes.
class StateDirLock {
 public:
  // The lock, or why not: the directory is in use (by the pid the lock file names) or cannot be used.
  static base::Result<StateDirLock> take(const std::string& state_dir);
  StateDirLock(StateDirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  StateDirLock& operator=(StateDirLock&& other) noexcept;
  ~StateDirLock();

 private:
  explicit StateDirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

class DurableState {
 public:
  // Takes the lock on `state_dir`, opens the database under it and reads the stats history into `stats`;
  // fails only if the directory cannot be used or another warden holds it.
  base::Result<void> open(const std::string& state_dir, StatsStore& stats, std::int64_t unix_now);

  // At start: each model's stored routing change (while the config file still says what it said when the
  // change was made) into its Router, its stored homes into its session table; then what was restored is
  // what is stored (homes of models and replicas no longer there are gone).
  void restore(std::span<const std::unique_ptr<ModelRuntime>> models, const ClockPair& now);

  // A model a reload adds: its stored routing change and homes (kept while it was removed), nothing
  // else rewritten.
  void restore_model(ModelRuntime& m, const ClockPair& now);

  // Stores `m`'s routing as the admin API left it, with the config file's at the time.
  void save_routing(ModelRuntime& m);
  // A reload read `m`'s routing from the file again: an admin API change it kept is stored against the
  // file's new routing (so a restart keeps it too), and none is stored once the file's is all in force.
  void routing_reloaded(ModelRuntime& m);

  // Writes the stats history and the homes that changed (`homes`, one entry per model). Homes a write
  // could not store (a full disk) are kept and written with the next one.
  void flush(StatsStore& stats, std::int64_t unix_now, const std::vector<HomeChanges>& homes);

 private:
  void restore_routing(ModelRuntime& m);
  std::optional<std::vector<StoredHome>> restore_homes(ModelRuntime& m, const ClockPair& now);

  std::optional<StateDirLock> lock_;
  std::unique_ptr<StatsDb> stats_db_;
  std::optional<RoutingStateDb> routing_db_;  // statements over stats_db_'s database
  std::vector<HomeChanges> unwritten_;        // what failed writes left, for the next one
};

}  // namespace warden::gateway
