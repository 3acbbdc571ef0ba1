#include "gateway/stores/durable_state.hpp"

#include <spdlog/spdlog.h>

#include <boost/json/serialize.hpp>
#include <chrono>

#include "gateway/routing_json.hpp"

namespace warden::gateway {

ClockPair clocks_now() {
  using namespace std::chrono;
  return {steady_clock::now().time_since_epoch(),
          duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count()};
}

bool DurableState::open(const std::string& state_dir, StatsStore& stats, std::int64_t unix_now,
                        std::string* error) {
  stats_db_ = StatsDb::open(state_dir, error);
  if (!stats_db_) {
    return false;
  }
  std::string err;
  if (!load_history(*stats_db_, stats, unix_now, &err)) {
    spdlog::warn("stats history could not be read ({}); starting empty", err);
  }
  routing_db_ = RoutingStateDb::open(stats_db_->handle(), &err);
  if (!routing_db_) {
    spdlog::warn("routing state not kept across restarts: {}", err);
  }
  return true;
}

void DurableState::restore(std::span<const std::unique_ptr<ModelRuntime>> models, const ClockPair& now) {
  if (!routing_db_) {
    return;
  }
  std::string err;
  std::vector<std::pair<std::string, std::vector<StoredHome>>> kept;
  for (const auto& m : models) {
    const std::string& name = m->config().name;
    restore_routing(*m);
    const auto stored = routing_db_->load_homes(name, &err);
    m->router().import_sessions(homes_to_restore(stored, m->config().replica_count(), now), now.steady);
    m->router().track_session_changes(true);
    std::vector<StoredHome> live;
    for (const auto& r : m->router().export_sessions(now.steady)) {
      live.push_back(now.to_stored(r));
    }
    if (!stored.empty()) {
      spdlog::info("restored {} conversation homes of model {} ({} expired or on a replica no longer there)",
                   live.size(), name, stored.size() - live.size());
    }
    kept.emplace_back(name, std::move(live));
  }
  // What was restored is what is stored from now on: other models' and dropped homes are deleted.
  if (!err.empty() || !routing_db_->replace_homes(kept, &err)) {
    spdlog::warn("conversation homes could not be read back or rewritten: {}", err);
  }
}

// A stored change applies while the config file still says what it said when the change was made.
void DurableState::restore_routing(ModelRuntime& m) {
  std::string err;
  const std::string& name = m.config().name;
  const auto stored = routing_db_->load_routing(name, &err);
  if (!stored) {
    if (!err.empty()) {
      spdlog::warn("routing change of model {} not restored: {}", name, err);
    }
    return;
  }
  // Read over the file's routing: a knob the stored text does not name (stored before it was kept) is the
  // file's.
  const core::RoutingConfig& file = m.config().routing;
  const auto at_change = patch_routing(file, stored->config_routing, RoutingScope::stored);
  const auto routing = patch_routing(file, stored->routing, RoutingScope::stored);
  if (!at_change || !routing || *at_change != file || !m.router().set_routing(*routing)) {
    spdlog::info("routing change of model {} dropped: {}", name,
                 at_change && routing ? "the config file's routing changed since" : "unreadable");
    routing_db_->forget_routing(name, &err);
    return;
  }
  spdlog::info("routing restored model={} {}", name, stored->routing);
}

void DurableState::save_routing(ModelRuntime& m) {
  if (!routing_db_) {
    return;
  }
  std::string err;
  if (!routing_db_->save_routing(
          {m.config().name, boost::json::serialize(routing_json(m.router().routing_config())),
           boost::json::serialize(routing_json(m.config().routing))},
          &err)) {
    spdlog::warn("routing change of model {} is in force but not stored: {}", m.config().name, err);
  }
}

void DurableState::flush(StatsStore& stats, std::int64_t unix_now, const std::vector<HomeChanges>& homes) {
  std::string err;
  if (stats_db_ && !flush_history(*stats_db_, stats, unix_now, &err)) {
    spdlog::warn("stats history could not be written: {}", err);
  }
  if (routing_db_ && !routing_db_->save_homes(homes, &err)) {
    spdlog::warn("conversation homes could not be written: {}", err);
  }
}

}  // namespace warden::gateway
