// A routing configuration with every setting of the table (settings/routing.cpp) away from
// its default (the unit test of the table checks that each one is), and the settings' leaves: the
// every-setting integration test (gateway_settings_test.cpp) sends it through the config file, the admin
// API and a restart.
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <map>
#include <string>

#include "core/types.hpp"
#include "settings/routing.hpp"

namespace routing_test {

inline warden::core::RoutingConfig every_setting_changed() {
  using namespace std::chrono_literals;
  warden::core::RoutingConfig c;
  c.affinity = false;
  c.spill_threshold = {3};
  c.max_num_seqs = 48;
  c.policy = "round-robin";
  c.admission = {.enabled = true,
                 .max_queue = 7,
                 .max_wait = 1500ms,
                 .high_water = 1.25,
                 .low_water = 0.8,
                 .only_when_waiting = true,
                 .hold_task_starts = true,
                 .tenant_queue = 3};
  c.vllm_balancer = warden::core::VllmBalancerModel::legacy;
  c.cost_spill = {false, 750ms};
  c.rebalance = false;
  c.threads = false;
  c.task_admission = {false, 2min, 45min, warden::core::TaskPacking::growth, 30s};
  return c;
}

// The leaves of the table's JSON of `c`, by their dotted names ("admission.max_wait" -> "30000ms").
inline std::map<std::string, boost::json::value> setting_leaves(const warden::core::RoutingConfig& c) {
  std::map<std::string, boost::json::value> out;
  const auto walk = [&out](const auto& self, const boost::json::object& o,
                           const std::string& prefix) -> void {
    for (const auto& [key, value] : o) {
      if (value.is_object()) {
        self(self, value.as_object(), prefix + std::string(key) + ".");
      } else {
        out[prefix + std::string(key)] = value;
      }
    }
  };
  walk(walk, warden::settings::routing_json(c), "");
  return out;
}

}  // namespace routing_test
