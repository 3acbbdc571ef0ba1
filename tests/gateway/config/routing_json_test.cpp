#include "gateway/config/routing_json.hpp"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>

using namespace warden::gateway;
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

// A configuration with every knob away from its default.
RoutingConfig unusual() {
  RoutingConfig c;
  c.affinity = false;
  c.spill_threshold = {3};
  c.max_num_seqs = 48;
  c.policy = "round-robin";
  c.admission = {.enabled = true,
                 .max_queue = 7,
                 .max_wait = std::chrono::milliseconds(1500),
                 .high_water = 1.25,
                 .low_water = 0.8,
                 .only_when_waiting = true};
  c.vllm_balancer = warden::core::VllmBalancerModel::legacy;
  c.cost_spill = {true, std::chrono::milliseconds(750)};
  c.rebalance = false;
  c.threads = false;
  return c;
}

}  // namespace

TEST(RoutingJson, EveryKnobRoundTripsThroughTheStoredForm) {
  const RoutingConfig c = unusual();
  ASSERT_NE(c, RoutingConfig{});
  const auto text = boost::json::serialize(routing_json(c));
  EXPECT_EQ(patched(RoutingConfig{}, text, RoutingScope::stored), c) << text;
  const auto defaults = boost::json::serialize(routing_json(RoutingConfig{}));
  EXPECT_EQ(patched(c, defaults, RoutingScope::stored), RoutingConfig{}) << defaults;
}

TEST(RoutingJson, APatchChangesOnlyWhatItNames) {
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
  want = base;
  want.rebalance = true;
  EXPECT_EQ(patched(base, R"({"rebalance": true})"), want);
  want = base;
  want.threads = true;
  EXPECT_EQ(patched(base, R"({"threads": true})"), want);
}

TEST(RoutingJson, TheAdminScopeLeavesWhatTheConfigAndEnginesFix) {
  for (const char* body :
       {R"({"policy": "vllm-lb"})", R"({"max_num_seqs": 8})", R"({"vllm_balancer": "legacy"})"}) {
    EXPECT_NE(error_of(body).find("unknown field"), std::string::npos) << body;
    EXPECT_TRUE(error_of(body, RoutingScope::stored).empty()) << body;
  }
  EXPECT_NE(error_of(R"({"colour": 1})")
                .find("expected affinity, spill_threshold, rebalance, threads, cost_spill, admission"),
            std::string::npos)
      << error_of(R"({"colour": 1})");
}

TEST(RoutingJson, BadPatchesAreRefusedWithAReason) {
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
                          R"({"policy": "bogus"})",
                          R"({"max_num_seqs": 0})",
                          R"({"vllm_balancer": "newest"})"}) {
    EXPECT_FALSE(error_of(bad, RoutingScope::stored).empty()) << bad;
  }
}

TEST(RoutingJson, AValueStoredBeforeEveryKnobWasKeptLeavesTheOthersAtTheFiles) {
  RoutingConfig file = unusual();
  RoutingConfig want = file;
  want.affinity = true;
  want.spill_threshold = {4};
  EXPECT_EQ(patched(file, R"({"affinity":true,"spill_threshold":"4"})", RoutingScope::stored), want);
}
