#include "settings/routing.hpp"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <map>
#include <string>

#include "every_routing_setting.hpp"

using namespace warden::settings;
using warden::core::RoutingConfig;

namespace {

RoutingConfig patched(const RoutingConfig& base, std::string_view body,
                      RoutingScope scope = RoutingScope::admin) {
  auto r = patch_routing(base, body, scope);
  EXPECT_TRUE(r.has_value()) << body << ": " << (r ? "" : r.error());
  return r ? *r : base;
}

std::string error_of(std::string_view body, RoutingScope scope = RoutingScope::admin) {
  auto r = patch_routing(RoutingConfig{}, body, scope);
  return r ? std::string() : r.error();
}

RoutingConfig unusual() {
  return routing_test::every_setting_changed();
}

}  // namespace

TEST(RoutingSettings, EveryKnobRoundTripsThroughTheStoredForm) {
  const RoutingConfig c = unusual();
  ASSERT_NE(c, RoutingConfig{});
  const auto text = boost::json::serialize(routing_json(c));
  EXPECT_EQ(patched(RoutingConfig{}, text, RoutingScope::stored), c) << text;
  const auto defaults = boost::json::serialize(routing_json(RoutingConfig{}));
  EXPECT_EQ(patched(c, defaults, RoutingScope::stored), RoutingConfig{}) << defaults;
}

TEST(RoutingSettings, APatchChangesOnlyWhatItNames) {
  const RoutingConfig base = unusual();
  RoutingConfig want = base;
  want.affinity = true;
  EXPECT_EQ(patched(base, R"({"affinity": true})"), want);
  want.spill_threshold = {};
  EXPECT_EQ(patched(base, R"({"affinity": true, "spill_threshold": "auto"})"), want);
  want = base;
  want.admission.max_queue = 2;
  want.admission.max_wait = std::chrono::milliseconds(2500);
  EXPECT_EQ(patched(base, R"({"admission": {"max_queue": 2, "max_wait": 2.5}})"), want)
      << "the mode left out keeps its value";
  want = base;
  want.admission.enabled = false;
  EXPECT_EQ(patched(base, R"({"admission": "off"})"), want);
  want = base;
  want.cost_spill.enabled = false;
  EXPECT_EQ(patched(base, R"({"cost_spill": "off"})"), want);
  want.cost_spill.margin = std::chrono::seconds(3);
  EXPECT_EQ(patched(base, R"({"cost_spill": {"mode": "off", "margin": "3s"}})"), want);
  want = base;
  want.task_admission.enabled = false;
  want.task_admission.max_wait = std::chrono::minutes(2);
  EXPECT_EQ(patched(base, R"({"task_admission": {"mode": "off", "max_wait": "2m"}})"), want);
  want.task_admission.stream_max_wait = std::chrono::minutes(45);
  EXPECT_EQ(
      patched(base, R"({"task_admission": {"mode": "off", "max_wait": "2m", "stream_max_wait": "45m"}})"),
      want)
      << "the bound of a held start whose stream the warden keeps alive";
  want.task_admission.stream_max_wait.reset();
  EXPECT_EQ(patched(want, R"({"task_admission": {"stream_max_wait": "auto"}})"), want) << "auto again";
  want = base;
  want.task_admission.packing = warden::core::TaskPacking::remaining;
  EXPECT_EQ(patched(base, R"({"task_admission": {"packing": "remaining"}})", RoutingScope::stored), want)
      << "how the tasks under way are counted: the file and the stored state, not a PATCH";
  want = base;
  want.rebalance = true;
  EXPECT_EQ(patched(base, R"({"rebalance": true})"), want);
  want = base;
  want.threads = true;
  EXPECT_EQ(patched(base, R"({"threads": true})"), want);
}

TEST(RoutingSettings, TheAdminScopeLeavesWhatTheConfigAndEnginesFix) {
  for (const char* body :
       {R"({"policy": "vllm-lb"})", R"({"max_num_seqs": 8})", R"({"vllm_balancer": "legacy"})",
        R"({"admission": {"high_water": 2}})", R"({"admission": {"low_water": 0.5}})",
        R"({"admission": {"when_waiting": true}})", R"({"admission": {"hold_task_starts": true}})"}) {
    EXPECT_NE(error_of(body).find("unknown key"), std::string::npos) << body;
    EXPECT_TRUE(error_of(body, RoutingScope::stored).empty()) << body;
  }
  EXPECT_NE(error_of(R"({"colour": 1})")
                .find("unknown key 'colour' in routing; expected one of: affinity, spill_threshold, "),
            std::string::npos)
      << error_of(R"({"colour": 1})");
}

TEST(RoutingSettings, BadPatchesAreRefusedWithAReason) {
  for (const char* bad : {"",
                          "[]",
                          "{}",
                          "{\"affinity\": tru",
                          R"({"affinity": "no"})",
                          R"({"spill_threshold": 0})",
                          R"({"spill_threshold": -1})",
                          R"({"spill_threshold": "lots"})",
                          R"({"spill_threshold": 2.5})",
                          R"({"spill_threshold": 1000001})",
                          R"({"rebalance": "yes"})",
                          R"({"threads": 1})",
                          R"({"cost_spill": true})",
                          R"({"cost_spill": {"margin": -1}})",
                          R"({"admission": "on"})",
                          R"({"admission": true})",
                          R"({"admission": {}})",
                          R"({"admission": {"max_queue": -1}})",
                          R"({"admission": {"max_wait": "soon"}})",
                          R"({"admission": {"max_wait": 0}})",
                          R"({"admission": {"colour": 1}})",
                          R"({"admission": {"high_water": 0}})",
                          R"({"admission": {"low_water": 1.5}})",
                          R"({"admission": {"hold_task_starts": "yes"}})",
                          R"({"admission": {"when_waiting": 1}})",
                          R"({"task_admission": {"max_wait": "0ms"}})",
                          R"({"task_admission": {"packing": "tight"}})",
                          R"({"task_admission": {"packing": 1}})",
                          R"({"policy": "bogus"})",
                          R"({"max_num_seqs": 0})",
                          R"({"vllm_balancer": "newest"})"}) {
    EXPECT_FALSE(error_of(bad, RoutingScope::stored).empty()) << bad;
  }
}

TEST(RoutingSettings, AValueStoredBeforeEveryKnobWasKeptLeavesTheOthersAtTheFiles) {
  RoutingConfig file = unusual();
  RoutingConfig want = file;
  want.affinity = true;
  want.spill_threshold = {4};
  EXPECT_EQ(patched(file, R"({"affinity":true,"spill_threshold":"4"})", RoutingScope::stored), want);
}

TEST(RoutingSettings, TheTestConfigurationChangesEverySetting) {
  const auto defaults = routing_test::setting_leaves(RoutingConfig{});
  const auto changed = routing_test::setting_leaves(unusual());
  ASSERT_EQ(defaults.size(), changed.size());
  for (const auto& [name, value] : defaults) {
    EXPECT_NE(changed.at(name), value) << name << " is at its default in every_setting_changed()";
  }
}

TEST(RoutingSettings, TextValuesAreBooleansNumbersOrStrings) {
  EXPECT_EQ(text_value("true"), boost::json::value(true));
  EXPECT_EQ(text_value("FALSE"), boost::json::value(false));
  EXPECT_EQ(text_value("12"), boost::json::value(12));
  EXPECT_EQ(text_value("-3"), boost::json::value(-3));
  EXPECT_EQ(text_value("1.25"), boost::json::value(1.25));
  EXPECT_EQ(text_value("1.25E0"), boost::json::value(1.25));
  for (const char* word :
       {"auto", "off", "on", "yes", "30s", "1.5s", "inf", "nan", "", "0x10", "round-robin"}) {
    EXPECT_EQ(text_value(word), boost::json::value(word)) << word;
  }
}

// Every setting of the stored form read one by one as text, as the config file and simulate's --routing
// give them: the same configuration.
TEST(RoutingSettings, EverySettingReadsFromTextOneByOne) {
  RoutingConfig c;
  for (const auto& [name, value] : routing_test::setting_leaves(unusual())) {
    const std::string text =
        value.is_string() ? std::string(value.as_string()) : boost::json::serialize(value);
    auto read = read_setting(c, name, text_value(text), "");
    EXPECT_TRUE(read.has_value()) << name << "=" << text << ": " << (read ? "" : read.error().message);
  }
  EXPECT_EQ(c, unusual());
}

TEST(RoutingSettings, TextTakesYamlBooleanWordsAndNamesTheSettingInItsMessages) {
  RoutingConfig c;
  ASSERT_TRUE(read_setting(c, "rebalance", text_value("off"), "m").has_value());
  ASSERT_TRUE(read_setting(c, "admission.when_waiting", text_value("yes"), "m").has_value());
  EXPECT_FALSE(c.rebalance);
  EXPECT_TRUE(c.admission.only_when_waiting);
  EXPECT_FALSE(error_of(R"({"rebalance": "off"})", RoutingScope::stored).empty())
      << "JSON's booleans are true and false";

  const auto error = [](std::string_view name, std::string_view text) {
    RoutingConfig c;
    auto read = read_setting(c, name, text_value(text), "models[0].routing");
    EXPECT_EQ(c, RoutingConfig{}) << "a refused setting changes nothing";
    return read ? SettingError{} : read.error();
  };
  EXPECT_EQ(error("affinity", "maybe").message, "models[0].routing.affinity must be true or false");
  EXPECT_EQ(error("admission.max_queue", "-1").message,
            "models[0].routing.admission.max_queue must be an integer from 0 to 1000000");
  EXPECT_EQ(error("admission", "on").message, "models[0].routing.admission must be off or auto");
  EXPECT_EQ(error("cost_spill.mode", "auto").message, "models[0].routing.cost_spill.mode must be off or on");
  EXPECT_EQ(error("policy", "magic").message.find("models[0].routing.policy 'magic' is not a routing policy"),
            0u);
  const SettingError key = error("colour", "1");
  EXPECT_EQ(key.part, SettingError::Part::key);
  EXPECT_EQ(key.message.find("unknown key 'colour' in models[0].routing; expected one of: affinity, "), 0u)
      << key.message;
  const SettingError member = error("admission.size", "3");
  EXPECT_EQ(member.part, SettingError::Part::member);
  EXPECT_EQ(member.message,
            "unknown key 'size' in models[0].routing.admission; expected one of: mode, max_queue, "
            "max_wait, high_water, low_water, when_waiting, hold_task_starts, tenant_queue");
  EXPECT_EQ(error("threads", "2").part, SettingError::Part::value);
}

TEST(RoutingSettings, LowWaterAboveHighWaterIsRefused) {
  RoutingConfig c;
  c.admission.low_water = 1.1;
  EXPECT_EQ(check_routing(c, "models[0].routing").error(),
            "models[0].routing.admission.low_water must not exceed models[0].routing.admission.high_water");
  EXPECT_FALSE(error_of(R"({"admission": {"low_water": 1.1}})", RoutingScope::stored).empty());
}

// A configuration made in code (simulate's, a test's) is held to the rules the readers apply: a value an
// entry would refuse is refused by check_routing too, named after `where`.
TEST(RoutingSettings, CheckRefusesWhatAnEntryRefuses) {
  EXPECT_TRUE(check_routing(unusual(), "routing").has_value());
  RoutingConfig c;
  c.admission.high_water = 150;
  c.admission.low_water = 0.5;
  EXPECT_EQ(check_routing(c, "routing").error(),
            "routing.admission.high_water must be a number above 0 and at most 100 (a fraction of the KV "
            "capacity)");
  c = RoutingConfig{};
  c.admission.low_water = 0;
  EXPECT_NE(check_routing(c, "routing").error().find("routing.admission.low_water must be a number above 0"),
            std::string::npos);
  c = RoutingConfig{};
  c.policy = "nearest";
  EXPECT_NE(check_routing(c, "").error().find("policy 'nearest' is not a routing policy"), std::string::npos);
  c = RoutingConfig{};
  c.admission.max_wait = warden::core::Time{0};
  EXPECT_NE(check_routing(c, "").error().find("admission.max_wait must be a duration"), std::string::npos);
}

// The admin API's help for a wrong method names what PATCH takes: every setting of the admin scope, in the
// table's order, and none of the stored scope's.
TEST(RoutingSettings, ShapeNamesWhatEachScopeTakes) {
  EXPECT_EQ(
      routing_shape(RoutingScope::admin),
      "{\"affinity\": bool, \"spill_threshold\": \"auto\"|N, \"rebalance\": bool, \"threads\": bool, "
      "\"cost_spill\": \"on\"|\"off\"|{...}, \"admission\": \"off\"|\"auto\"|{...}, \"task_admission\": "
      "\"off\"|\"auto\"|{...}}");
  const std::string stored = routing_shape(RoutingScope::stored);
  for (const auto& [key, value] : routing_json(RoutingConfig{})) {
    EXPECT_NE(stored.find("\"" + std::string(key) + "\": "), std::string::npos) << key;
  }
}
