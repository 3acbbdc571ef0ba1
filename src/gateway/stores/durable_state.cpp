// What the gateway keeps across restarts besides the stats history: conversation homes and routing
// changes made through the admin API (routing_state.hpp), restored at start and written by flush().
#include <spdlog/spdlog.h>

#include <boost/json/serialize.hpp>
#include <chrono>

#include "gateway/gateway.hpp"
#include "gateway/routing_json.hpp"

namespace warden::gateway {

namespace {

ClockPair clocks_now() {
  using namespace std::chrono;
  return {steady_clock::now().time_since_epoch(),
          duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count()};
}

}  // namespace

void Gateway::restore_state() {
  std::string err;
  routing_db_ = RoutingStateDb::open(stats_db_->handle(), &err);
  if (!routing_db_) {
    spdlog::warn("routing state not kept across restarts: {}", err);
    return;
  }
  const ClockPair now = clocks_now();
  std::vector<std::pair<std::string, std::vector<StoredHome>>> kept;
  for (auto& m : models_) {
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
void Gateway::restore_routing(ModelRuntime& m) {
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
  queue_of(m).configure(routing->admission);
  spdlog::info("routing restored model={} {}", name, stored->routing);
}

void Gateway::save_routing(ModelRuntime& m) {
  if (!routing_db_) {
    return;
  }
  const core::RoutingConfig now = m.router().routing_config();
  const core::RoutingConfig& file = m.config().routing;
  std::string err;
  if (!routing_db_->save_routing({m.config().name, boost::json::serialize(routing_json(now)),
                                  boost::json::serialize(routing_json(file))},
                                 &err)) {
    spdlog::warn("routing change of model {} is in force but not stored: {}", m.config().name, err);
  }
}

void Gateway::flush() {
  std::string err;
  if (stats_db_ && !flush_history(*stats_db_, stats_, unix_now(), &err)) {
    spdlog::warn("stats history could not be written: {}", err);
  }
  const ClockPair now = clocks_now();
  std::vector<HomeChanges> all;
  for (auto& m : models_) {
    auto taken = m->router().take_session_changes();
    share_changes(*m, taken);
    const auto ttl =
        std::chrono::duration_cast<std::chrono::milliseconds>(m->router().session_config().idle_ttl).count();
    HomeChanges c{m->config().name, {}, std::move(taken.removed), now.unix_ms - ttl};
    c.changed.reserve(taken.changed.size());
    for (const auto& r : taken.changed) {
      c.changed.push_back(now.to_stored(r));
    }
    all.push_back(std::move(c));
  }
  if (routing_db_ && !routing_db_->save_homes(all, &err)) {
    spdlog::warn("conversation homes could not be written: {}", err);
  }
}

}  // namespace warden::gateway
