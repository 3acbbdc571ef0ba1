#include "supervisor/launcher.hpp"

#include "supervisor/status_json.hpp"

namespace warden::supervisor {

void Launcher::add_model(const LaunchSpec& launch, const ModelLayout& layout,
                         const std::string& warden_binary) {
  Model& m = models_[layout.name];
  for (const EngineTarget& t : engine_targets(layout, warden_binary)) {
    const auto id = sup_.add(engine_spec(launch, t));
    m.ids.push_back(id);
    m.replicas.push_back(t.replicas);
    if (owners_.size() <= id) {
      owners_.resize(id + 1);
    }
    owners_[id] = Owner{layout.name, t.replicas};
  }
}

void Launcher::start() {
  sup_.on_exit([this](Supervisor::EngineId id, const std::string& why) {
    if (on_down_ && id < owners_.size()) {
      on_down_(owners_[id].model, owners_[id].replicas, why);
    }
  });
  sup_.on_ready([this](Supervisor::EngineId id) {
    if (on_up_ && id < owners_.size()) {
      on_up_(owners_[id].model, owners_[id].replicas, "ready");
    }
  });
  sup_.start();
}

boost::json::value Launcher::status_json(std::string_view model, std::size_t tail_lines) const {
  auto it = models_.find(model);
  if (it == models_.end()) {
    return nullptr;
  }
  return launch_status_json(sup_, it->second.ids, it->second.replicas, tail_lines);
}

std::optional<boost::json::object> Launcher::logs_json(std::string_view model, std::size_t lines) const {
  auto it = models_.find(model);
  if (it == models_.end()) {
    return std::nullopt;
  }
  return supervisor::logs_json(sup_, model, it->second.ids, lines);
}

}  // namespace warden::supervisor
