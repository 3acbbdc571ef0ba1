#include "gateway/stores/durable_state.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/trim.hpp"

#include "gateway/config/keep_unchanged.hpp"
#include "settings/routing.hpp"

namespace warden::gateway {

ClockPair clocks_now() {
  using namespace std::chrono;
  return {steady_clock::now().time_since_epoch(),
          duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count()};
}

base::Result<StateDirLock> StateDirLock::take(const std::string& state_dir) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  const std::string path = (std::filesystem::path(state_dir) / "lock").string();
  // Close-on-exec: a launched engine must not keep the directory locked after the warden is gone.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return base::Failure{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::array<char, 32> holder{};
    const ssize_t n = ::pread(fd, holder.data(), holder.size() - 1, 0);
    ::close(fd);
    return base::Failure{fmt::format(
        "state_dir '{}' is in use by another warden (pid {}); give each warden its own state_dir", state_dir,
        n > 0 ? base::trim(std::string_view(holder.data(), static_cast<std::size_t>(n)), " \t\n")
              : std::string_view("unknown"))};
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    spdlog::warn("{}: the warden's pid could not be written ({})", path, std::strerror(errno));
  }
  return StateDirLock(fd);
}

StateDirLock& StateDirLock::operator=(StateDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

StateDirLock::~StateDirLock() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

base::Result<void> DurableState::open(const std::string& state_dir, StatsStore& stats,
                                      std::int64_t unix_now) {
  auto lock = StateDirLock::take(state_dir);
  if (!lock) {
    return base::Failure{std::move(lock.error())};
  }
  lock_.emplace(std::move(*lock));
  auto db = StatsDb::open(state_dir);
  if (!db) {
    return base::Failure{std::move(db.error())};
  }
  stats_db_ = std::move(*db);
  if (auto loaded = load_history(*stats_db_, stats, unix_now); !loaded) {
    spdlog::warn("stats history could not be read ({}); starting empty", loaded.error());
  }
  auto routing = RoutingStateDb::open(stats_db_->handle());
  if (!routing) {
    spdlog::warn("routing state not kept across restarts: {}", routing.error());
    return {};
  }
  routing_db_ = *routing;
  return {};
}

void DurableState::restore(std::span<const std::unique_ptr<ModelRuntime>> models, const ClockPair& now) {
  if (!routing_db_) {
    return;
  }
  std::vector<std::pair<std::string, std::vector<StoredHome>>> kept;
  bool read_all = true;
  for (const auto& m : models) {
    auto live = restore_homes(*m, now);
    read_all = read_all && live.has_value();
    kept.emplace_back(m->config().name, live ? std::move(*live) : std::vector<StoredHome>{});
  }
  // What was restored is what is stored from now on: other models' and dropped homes are deleted. Unless
  // some could not be read: what is stored then stays as it is, for a later start to read.
  if (!read_all) {
    return;
  }
  if (auto rewritten = routing_db_->replace_homes(kept); !rewritten) {
    spdlog::warn("conversation homes could not be rewritten: {}", rewritten.error());
  }
}

void DurableState::restore_model(ModelRuntime& m, const ClockPair& now) {
  if (routing_db_) {
    (void)restore_homes(m, now);
  }
}

// `m`'s stored routing change and homes into its Router; the homes it holds then (nullopt: none could be
// read).
std::optional<std::vector<StoredHome>> DurableState::restore_homes(ModelRuntime& m, const ClockPair& now) {
  const std::string& name = m.config().name;
  restore_routing(m);
  auto stored = routing_db_->load_homes(name);
  m.homes().track_session_changes(true);
  if (!stored) {
    spdlog::warn("conversation homes of model {} could not be read back: {}", name, stored.error());
    return std::nullopt;
  }
  m.homes().import_sessions(homes_to_restore(*stored, m.config().replica_count(), now), now.steady);
  std::vector<StoredHome> live;
  for (const auto& r : m.router().export_sessions(now.steady)) {
    live.push_back(now.to_stored(r));
  }
  if (!stored->empty()) {
    spdlog::info("restored {} conversation homes of model {} ({} expired or on a replica no longer there)",
                 live.size(), name, stored->size() - live.size());
  }
  return live;
}

// A stored change applies as a reload applies the file over it: every setting the file changed since the
// change was made is the file's, every other one keeps the change (and it is stored again against the
// file's routing now, as a reload stores it).
void DurableState::restore_routing(ModelRuntime& m) {
  const std::string& name = m.config().name;
  const auto stored = routing_db_->load_routing(name);
  if (!stored) {
    spdlog::warn("routing change of model {} not restored: {}", name, stored.error());
    return;
  }
  if (!*stored) {
    return;
  }
  const StoredRouting& change = **stored;
  // Read over the file's routing: a knob the stored text does not name (stored before it was kept) is the
  // file's.
  const core::RoutingConfig& file = m.config().routing;
  const auto at_change = settings::patch_routing(file, change.config_routing, settings::RoutingScope::stored);
  const auto routing = settings::patch_routing(file, change.routing, settings::RoutingScope::stored);
  core::RoutingConfig next = file;
  if (at_change && routing) {
    keep_unchanged(next, *routing, *at_change, file);
  }
  if (!at_change || !routing || next == file || !m.set_routing(next)) {
    spdlog::info("routing change of model {} dropped: {}", name,
                 at_change && routing ? "the config file changed every setting it held since" : "unreadable");
    if (auto forgotten = routing_db_->forget_routing(name); !forgotten) {
      spdlog::warn("dropped routing change of model {} is still stored: {}", name, forgotten.error());
    }
    return;
  }
  if (*at_change != file) {
    save_routing(m);
  }
  spdlog::info("routing restored model={} {}", name, boost::json::serialize(settings::routing_json(next)));
}

void DurableState::save_routing(ModelRuntime& m) {
  if (!routing_db_) {
    return;
  }
  auto saved = routing_db_->save_routing(
      {m.config().name, boost::json::serialize(settings::routing_json(m.router().routing_config())),
       boost::json::serialize(settings::routing_json(m.config().routing))});
  if (!saved) {
    spdlog::warn("routing change of model {} is in force but not stored: {}", m.config().name, saved.error());
  }
}

void DurableState::routing_reloaded(ModelRuntime& m) {
  if (!routing_db_) {
    return;
  }
  if (m.router().routing_config() != m.config().routing) {
    save_routing(m);
  } else if (auto forgotten = routing_db_->forget_routing(m.config().name); !forgotten) {
    spdlog::warn("routing change of model {} is still stored: {}", m.config().name, forgotten.error());
  }
}

void DurableState::flush(StatsStore& stats, std::int64_t unix_now, const std::vector<HomeChanges>& homes) {
  if (stats_db_) {
    if (auto written = flush_history(*stats_db_, stats, unix_now); !written) {
      spdlog::warn("stats history could not be written: {}", written.error());
    }
  }
  if (!routing_db_) {
    return;
  }
  if (!unwritten_.empty()) {
    merge_home_changes(unwritten_, homes);
  }
  const std::vector<HomeChanges>& pending = unwritten_.empty() ? homes : unwritten_;
  if (auto written = routing_db_->save_homes(pending); !written) {
    if (unwritten_.empty()) {
      unwritten_ = homes;
    }
    spdlog::warn("conversation homes could not be written ({}): kept for the next write", written.error());
    return;
  }
  unwritten_.clear();
}

}  // namespace warden::gateway
