// The gateway's view of launched engines: the engines of every model with a `launch:` section, keyed by
// model name, with replica-level callbacks (which replicas just went down or came up) and the admin
// API's JSON. Wraps one Supervisor; the gateway owns one Launcher.
//
//   supervisor::Launcher launcher(ioc.get_executor());
//   launcher.add_model(spec, layout, supervisor::self_executable());
//   launcher.on_down([&](const std::string& model, const std::vector<int>& replicas, const std::string& why)
//   {...}); launcher.on_up(...); launcher.start();  ...  launcher.stop();
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/launch.hpp"
#include "supervisor/supervisor.hpp"

namespace warden::supervisor {

class Launcher {
 public:
  using ReplicaCallback =
      std::function<void(const std::string& model, const std::vector<int>& replicas, const std::string& why)>;

  explicit Launcher(boost::asio::any_io_executor ex) : sup_(ex) {}

  // Registers the engine process(es) of one model (one per distinct URL, see engine_targets()).
  void add_model(const LaunchSpec& launch, const ModelLayout& layout, const std::string& warden_binary);
  bool launches(std::string_view model) const { return models_.find(std::string(model)) != models_.end(); }
  bool empty() const { return models_.empty(); }

  // An engine exited (its replicas must not get traffic now) / answered /health (they may again).
  void on_down(ReplicaCallback f) { on_down_ = std::move(f); }
  void on_up(ReplicaCallback f) { on_up_ = std::move(f); }

  void start();
  void stop() { sup_.stop(); }
  bool stopped() const { return sup_.stopped(); }

  // `null` for a model the warden does not launch; else launch_status_json() of its engines.
  boost::json::value status_json(std::string_view model, std::size_t tail_lines = 20) const;
  // GET /api/models/{name}/logs; std::nullopt for a model the warden does not launch.
  std::optional<boost::json::object> logs_json(std::string_view model, std::size_t lines) const;

  Supervisor& supervisor() { return sup_; }

 private:
  struct Model {
    std::vector<Supervisor::EngineId> ids;
    std::vector<std::vector<int>> replicas;
  };
  struct Owner {
    std::string model;
    std::vector<int> replicas;
  };

  Supervisor sup_;
  std::map<std::string, Model, std::less<>> models_;
  std::vector<Owner> owners_;  // by EngineId
  ReplicaCallback on_down_;
  ReplicaCallback on_up_;
};

}  // namespace warden::supervisor
