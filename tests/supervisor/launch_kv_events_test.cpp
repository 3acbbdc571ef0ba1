// Engines launched with KV cache events (docs/engines.md, "KV cache events"): the JSON of vLLM's
// --kv-events-config with the ports the warden picked, added for engine: vllm and passed to a command by
// ${KV_EVENTS_CONFIG}; and the probe for a run of free ports.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>

#include "supervisor/free_ports.hpp"
#include "supervisor/launch.hpp"

namespace warden::supervisor {
namespace {

LaunchSpec spec(const std::string& yaml) {
  LaunchParseContext ctx;
  ctx.error = [](const YAML::Node&, const std::string& m) { ADD_FAILURE() << m; };
  return parse_launch(YAML::Load(yaml), "models[0].launch", ctx).value_or(LaunchSpec{});
}

ModelLayout dp2(std::uint16_t kv_port, std::uint16_t replay_port) {
  ModelLayout m;
  m.name = "m";
  m.data_parallel = true;
  m.dp_size = 2;
  m.urls = {{"127.0.0.1", 8000, "", kv_port, replay_port}};
  return m;
}

constexpr const char* kJson =
    R"({"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:25000","replay_endpoint":"tcp://*:25002"})";

}  // namespace

TEST(LaunchKvEvents, VllmGetsTheFlagWithThePortsPicked) {
  const auto targets = engine_targets(dp2(25000, 25002), "/opt/lm-warden");
  const CommandLine c = build_command(spec("engine: vllm"), targets.at(0));
  const auto flag = std::find(c.argv.begin(), c.argv.end(), "--kv-events-config");
  ASSERT_NE(flag, c.argv.end());
  EXPECT_EQ(*(flag + 1), kJson);
  EXPECT_TRUE(passes_kv_events(spec("engine: vllm")));
}

TEST(LaunchKvEvents, ACommandGetsItThroughItsPlaceholderOnly) {
  const LaunchSpec with = spec(R"(command: [sim, --kv-events-config, "${KV_EVENTS_CONFIG}"])");
  EXPECT_TRUE(passes_kv_events(with));
  EXPECT_EQ(build_command(with, engine_targets(dp2(25000, 25002), "w").at(0)).argv.back(), kJson);
  // Without ports (events off), the placeholder is vLLM's default: no events.
  EXPECT_EQ(build_command(with, engine_targets(dp2(0, 0), "w").at(0)).argv.back(), "{}");
  EXPECT_FALSE(passes_kv_events(spec("command: [sim, --port, \"${PORT}\"]")));
  const CommandLine vllm_off = build_command(spec("engine: vllm"), engine_targets(dp2(0, 0), "w").at(0));
  EXPECT_EQ(std::count(vllm_off.argv.begin(), vllm_off.argv.end(), "--kv-events-config"), 0);
}

TEST(LaunchKvEvents, AFreeRunOfPortsCanBeBound) {
  const auto first = free_port_run(4);
  ASSERT_TRUE(first.has_value());
  EXPECT_GE(*first, 20000);
  EXPECT_LE(*first + 4, 32768);
  EXPECT_FALSE(free_port_run(0).has_value());
}

}  // namespace warden::supervisor
