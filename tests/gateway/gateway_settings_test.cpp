// Every routing setting through every way it changes, on a real warden: a reload of the config file, the
// admin API's PATCH and a restart with the state dir, each read back from the model card. The settings are
// the table's (settings/routing.cpp): a setting one of these ways drops fails here.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <set>
#include <string>

#include "gateway_support.hpp"
#include "reload_support.hpp"
#include "settings/every_routing_setting.hpp"
#include "settings/routing.hpp"

using namespace gateway_test;
using warden::core::RoutingConfig;
using warden::settings::routing_json;

namespace {

const warden::net::Headers kToken{{"Authorization", "Bearer secret"}};

// The settings the admin API does not change (the config file's and the engines'), by their leaf names.
const std::set<std::string> kFileOnly = {"policy",
                                         "max_num_seqs",
                                         "vllm_balancer",
                                         "admission.high_water",
                                         "admission.low_water",
                                         "admission.when_waiting",
                                         "admission.hold_task_starts",
                                         "task_admission.packing"};

// Model m on the simulator at `port`, with `routing` (a YAML mapping; none: the defaults).
std::string model(int port, const std::string& routing) {
  return "  - name: m\n    served_model_name: " + kServed + "\n" +
         (routing.empty() ? "" : "    routing: " + routing + "\n") +
         "    replicas: { data_parallel: { url: http://127.0.0.1:" + std::to_string(port) + ", size: 2 } }\n";
}

// Every setting of `c` in the file: the table's JSON is a YAML flow mapping.
std::string routing_yaml(const RoutingConfig& c) {
  return boost::json::serialize(routing_json(c));
}

void reload_with(Warden& w, const std::string& models_yaml) {
  reload_test::rewrite(w, models_yaml, "");
  Client c(w.port);
  const auto r = c.post("/api/reload", "", kToken);
  ASSERT_EQ(r.status, 200u) << r.body;
}

// Each setting of `want`, as the model card of the warden at `port` shows it.
void expect_shown(int port, const RoutingConfig& want, const std::string& when) {
  const boost::json::value routing = card(port).at("routing");
  for (const auto& [name, value] : routing_test::setting_leaves(want)) {
    const boost::json::value* shown = &routing;
    for (std::size_t start = 0; shown && start <= name.size();) {
      const std::size_t dot = std::min(name.find('.', start), name.size());
      shown = shown->as_object().if_contains(name.substr(start, dot - start));
      start = dot + 1;
    }
    ASSERT_NE(shown, nullptr) << name << " is not on the card " << when;
    const bool same = shown->is_number() && value.is_number()
                          ? shown->to_number<double>() == value.to_number<double>()
                          : *shown == value;
    EXPECT_TRUE(same) << name << " " << when << ": shown " << boost::json::serialize(*shown) << ", expected "
                      << boost::json::serialize(value);
  }
}

}  // namespace

TEST(GatewaySettings, EverySettingChangesThroughAReloadAPatchAndARestart) {
  const RoutingConfig defaults;
  const RoutingConfig changed = routing_test::every_setting_changed();
  // What the PATCH below leaves: the settings it may change at their defaults again, the others the file's.
  RoutingConfig patched = defaults;
  patched.policy = changed.policy;
  patched.max_num_seqs = changed.max_num_seqs;
  patched.vllm_balancer = changed.vllm_balancer;
  patched.admission.high_water = changed.admission.high_water;
  patched.admission.low_water = changed.admission.low_water;
  patched.admission.only_when_waiting = changed.admission.only_when_waiting;
  patched.admission.hold_task_starts = changed.admission.hold_task_starts;
  patched.task_admission.packing = changed.task_admission.packing;
  boost::json::object body;  // every setting the admin API changes, at its default
  for (const auto& [name, value] : routing_test::setting_leaves(defaults)) {
    if (kFileOnly.count(name) == 0) {
      const std::size_t dot = name.find('.');
      if (dot == std::string::npos) {
        body[name] = value;
      } else {
        boost::json::value& of = body[name.substr(0, dot)];
        if (!of.is_object()) {
          of.emplace_object();
        }
        of.as_object()[name.substr(dot + 1)] = value;
      }
    }
  }

  auto sim = start_sim(2);
  TempDir state;
  {
    Warden w(model(sim->port(), ""), "", state.path.string());
    expect_shown(w.port, defaults, "at the start");
    reload_with(w, model(sim->port(), routing_yaml(changed)));
    expect_shown(w.port, changed, "after a reload of a file that changed every setting");

    Client c(w.port);
    const std::string text = boost::json::serialize(body);
    const auto r = c.raw().request(boost::beast::http::verb::patch, "/api/models/m/routing", text, kToken);
    ASSERT_TRUE(r && r->status == 200u) << text << " -> " << (r ? r->body : "no answer");
    expect_shown(w.port, patched, "after a PATCH of every setting the admin API changes");
    ASSERT_EQ(w.proc->stop(), 0);
  }
  Warden again(model(sim->port(), routing_yaml(changed)), "", state.path.string());
  expect_shown(again.port, patched, "after a restart with the state dir");
}
