#include "app/routing_options.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <array>
#include <boost/json/serialize.hpp>
#include <memory>

#include "settings/routing.hpp"

namespace warden::app {

namespace {

// A named flag: the setting it sets (a table key, or key.member), and what it says. `on`, when set, is
// the switch's word the flag's `on` stands for (`--task-admission on` is task_admission `auto`).
struct NamedFlag {
  const char* flag;
  const char* setting;
  const char* help;
  const char* on = nullptr;
};

const std::array<NamedFlag, 13> kNamedFlags = {{
    {"--spill-threshold", "spill_threshold", "auto or a number of requests in flight"},
    {"--task-admission", "task_admission",
     "Policy affinity: a new agent task waits while the tasks under way fill what the caches keep warm, a "
     "session's next task while they overflow its home (on) or never (off)",
     "auto"},
    {"--task-admission-wait", "task_admission.max_wait",
     "Router policies: a held task start is placed as usual after this wait"},
    {"--rebalance", "rebalance",
     "Policies affinity and admission: a conversation moves off an overloaded home (on) or never (off)"},
    {"--threads", "threads",
     "Policies affinity and admission: subagents get their own homes and new conversations prefer their "
     "cached prompt start (on), or one home per session placed by load (off)"},
    {"--admission-high", "admission.high_water",
     "Policy admission: admit new conversations while working set + prompt <= this x KV capacity"},
    {"--admission-low", "admission.low_water",
     "Policy admission: once one was held, admit again only within this x KV capacity"},
    {"--admission-when-waiting", "admission.when_waiting",
     "Policy admission: hold only while requests wait on the replicas (on) or by the estimate alone (off)"},
    {"--max-wait", "admission.max_wait", "Policy admission: a held request is admitted after this wait"},
    {"--max-queue", "admission.max_queue", "Policy admission: held requests beyond which one is refused"},
    {"--cost-spill", "cost_spill",
     "Policy admission: spill by predicted time to first token (on) or by --spill-threshold (off)"},
    {"--spill-margin", "cost_spill.margin", "Policy admission: predicted TTFT gain a cost spill needs"},
    {"--vllm-balancer", "vllm_balancer",
     "vLLM's DP balancer: current (max(in-flight, waiting + running) + KV-pressure penalty, rotating scan "
     "start) or legacy (4 * waiting + running, fixed start)"},
}};

// The default of a setting as the table writes it ("auto", "30000ms"), a boolean or a switch as on or off.
std::string default_of(std::string_view setting) {
  boost::json::value v = settings::routing_json(core::RoutingConfig{});
  for (std::size_t start = 0; start <= setting.size();) {
    const std::size_t dot = std::min(setting.find('.', start), setting.size());
    v = v.as_object().at(setting.substr(start, dot - start));
    start = dot + 1;
  }
  if (v.is_object()) {
    v = v.as_object().at("mode");
  }
  if (v.is_bool()) {
    return v.as_bool() ? "on" : "off";
  }
  if (v.is_double()) {
    return fmt::format("{}", v.as_double());
  }
  return v.is_string() ? std::string(v.as_string()) : boost::json::serialize(v);
}

}  // namespace

void add_routing_options(CLI::App& cmd, RoutingFlags& flags) {
  for (const NamedFlag& f : kNamedFlags) {
    cmd.add_option_function<std::string>(
           f.flag,
           [&flags, f](const std::string& value) {
             flags.given.push_back({fmt::format("{} {}", f.flag, value), f.setting,
                                    f.on && value == "on" ? std::string(f.on) : value});
           },
           f.help)
        ->default_str(f.on && default_of(f.setting) == f.on ? "on" : default_of(f.setting));
  }
  cmd.add_option_function<std::vector<std::string>>(
         "--routing",
         [&flags](const std::vector<std::string>& items) {
           for (const std::string& item : items) {
             const std::size_t eq = item.find('=');
             flags.given.push_back({"--routing " + item, item.substr(0, eq),
                                    eq == std::string::npos ? std::string() : item.substr(eq + 1)});
           }
         },
         "Any routing setting, KEY=VALUE as the config file's routing: writes it (docs/config.md; a member "
         "as admission.max_wait=10s); repeatable, applied after the flags above. The policies set their own "
         "policy, affinity and max_num_seqs")
      ->type_name("KEY=VALUE");
}

base::Result<void> apply_routing_options(const RoutingFlags& flags, core::RoutingConfig& routing) {
  for (const RoutingFlags::Given& g : flags.given) {
    if (auto read = settings::read_setting(routing, g.setting, settings::text_value(g.value), ""); !read) {
      return base::Failure{fmt::format("{}: {}", g.flag, read.error().message)};
    }
  }
  return settings::check_routing(routing, "");
}

}  // namespace warden::app
