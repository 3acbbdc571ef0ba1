// A model's `kv_events:` (docs/config.md): the publishers the warden listens to, each replica's from the
// file (a data-parallel server's ranks on the base port + rank), on by itself for launched engines that are
// told where to publish, and every mistake reported at its line.
#include <gtest/gtest.h>

#include <string>

#include "gateway/config/config.hpp"

using namespace warden::gateway;

namespace {

ConfigResult parse(const std::string& models) {
  return parse_config("models:\n" + models, "w.yaml");
}

}  // namespace

TEST(KvEventsConfig, ADataParallelServersRanksPublishOnTheBasePortPlusTheirRank) {
  const auto r = parse(R"(  - name: m
    replicas: { data_parallel: { url: http://gpu1:8000, size: 3 } }
    kv_events: { endpoint: tcp://gpu1:5557, replay_endpoint: tcp://gpu1:5600, topic: kv, stale_after: 2s }
)");
  ASSERT_TRUE(r.ok()) << r.error_text();
  const KvEventsConfig& k = r.config->models[0].kv_events;
  EXPECT_TRUE(k.enabled);
  EXPECT_FALSE(k.launched);
  ASSERT_EQ(k.endpoints.size(), 3u);
  EXPECT_EQ(k.endpoints[0].endpoint, "tcp://gpu1:5557");
  EXPECT_EQ(k.endpoints[2].endpoint, "tcp://gpu1:5559");
  EXPECT_EQ(k.endpoints[2].replay_endpoint, "tcp://gpu1:5602");
  EXPECT_EQ(k.topic, "kv");
  EXPECT_EQ(k.stale_after, std::chrono::seconds(2));
}

TEST(KvEventsConfig, ServersOfTheirOwnNameOnePublisherEach) {
  const auto r = parse(R"(  - name: m
    replicas: { urls: [http://gpu1:8000, http://gpu2:8000] }
    kv_events:
      endpoints: [tcp://gpu1:5557, { endpoint: tcp://gpu2:5557, replay_endpoint: tcp://gpu2:5558 }]
)");
  ASSERT_TRUE(r.ok()) << r.error_text();
  const KvEventsConfig& k = r.config->models[0].kv_events;
  ASSERT_EQ(k.endpoints.size(), 2u);
  EXPECT_EQ(k.endpoints[0].replay_endpoint, "");
  EXPECT_EQ(k.endpoints[1].replay_endpoint, "tcp://gpu2:5558");

  const auto one = parse(R"(  - name: m
    replicas: { urls: [http://gpu1:8000] }
    kv_events: { endpoint: tcp://gpu1:5557, replay_endpoint: tcp://gpu1:5558 }
)");
  ASSERT_TRUE(one.ok()) << one.error_text();
  ASSERT_EQ(one.config->models[0].kv_events.endpoints.size(), 1u);
  EXPECT_EQ(one.config->models[0].kv_events.endpoints[0].replay_endpoint, "tcp://gpu1:5558");
}

TEST(KvEventsConfig, AbsentOrOffMeansNoEvents) {
  const auto r = parse(R"(  - name: m
    replicas: { urls: [http://gpu1:8000] }
  - name: n
    replicas: { urls: [http://gpu1:8001] }
    kv_events: { enabled: false, endpoint: tcp://gpu1:5557 }
)");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_FALSE(r.config->models[0].kv_events.enabled);
  EXPECT_FALSE(r.config->models[1].kv_events.enabled);
  EXPECT_TRUE(r.config->models[1].kv_events.endpoints.empty());
}

TEST(KvEventsConfig, LaunchedEnginesAreListenedToWhenTheyAreToldWhereToPublish) {
  const auto r = parse(R"(  - name: v
    replicas: { data_parallel: { url: http://127.0.0.1:8000, size: 2 } }
    launch: { engine: vllm }
  - name: c
    replicas: { urls: [http://127.0.0.1:8001] }
    launch: { command: [sim, --port, "${PORT}", --kv-events-config, "${KV_EVENTS_CONFIG}"] }
  - name: quiet
    replicas: { urls: [http://127.0.0.1:8002] }
    launch: { command: [sim, --port, "${PORT}"] }
)");
  ASSERT_TRUE(r.ok()) << r.error_text();
  EXPECT_TRUE(r.config->models[0].kv_events.enabled && r.config->models[0].kv_events.launched);
  EXPECT_TRUE(r.config->models[1].kv_events.enabled && r.config->models[1].kv_events.launched);
  EXPECT_FALSE(r.config->models[2].kv_events.enabled);
}

TEST(KvEventsConfig, MistakesAreReportedAtTheirLine) {
  const auto r = parse(R"(  - name: m
    replicas: { data_parallel: { url: http://gpu1:8000, size: 2 } }
    kv_events: { endpoint: "tcp://*:5557", colour: red }
  - name: n
    replicas: { urls: [http://gpu1:8000, http://gpu2:8000] }
    kv_events: { endpoints: [tcp://gpu1:5557] }
  - name: l
    replicas: { urls: [http://127.0.0.1:8001] }
    launch: { command: [sim] }
    kv_events: { endpoint: tcp://127.0.0.1:5557 }
  - name: q
    replicas: { urls: [http://127.0.0.1:8002] }
    launch: { command: [sim] }
    kv_events: {}
  - name: p
    replicas: { data_parallel: { url: http://gpu1:8000, size: 2 } }
    kv_events: { endpoint: "ipc:///tmp/kv" }
)");
  ASSERT_FALSE(r.ok());
  const std::string e = r.error_text();
  EXPECT_NE(e.find("w.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'colour'"), std::string::npos) << e;
  EXPECT_NE(e.find("a wildcard host is where the engine binds"), std::string::npos) << e;
  EXPECT_NE(e.find("must list one publisher per replica (2)"), std::string::npos) << e;
  EXPECT_NE(e.find("the warden picks the ports of the engines it launches"), std::string::npos) << e;
  EXPECT_NE(e.find("does not pass ${KV_EVENTS_CONFIG}"), std::string::npos) << e;
  EXPECT_NE(e.find("only a tcp:// endpoint serves several data-parallel ranks"), std::string::npos) << e;
}
