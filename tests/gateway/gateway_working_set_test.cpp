// A model's working set against its caches through real HTTP: an engine stand-in whose /metrics names
// its GPU cache and its host (CPU) offload, a warden scraping it; the admin API's working_set and the
// warden's /metrics carry what the console card and the alert read.
#include <gtest/gtest.h>

#include "gateway/engine_stand_ins.hpp"
#include "gateway/gateway_support.hpp"

using namespace gateway_test;

TEST(GatewayWorkingSet, TheEnginesHostOffloadAndTheConversationsReachTheCardAndTheMetrics) {
  FaultyEngine engine(FaultyEngine::Fault::none, kServed);
  // 2,500 blocks of 16 tokens on the GPU, 16 GiB of host memory holding 7,281 such blocks.
  engine.add_metrics(
      "vllm:cache_config_info{block_size=\"16\",engine=\"0\",kv_offloading_backend=\"native\","
      "kv_offloading_size=\"16.0\",num_cpu_blocks=\"7281\",num_gpu_blocks=\"2500\"} 1.0\n");
  Warden w("  - name: m\n    served_model_name: " + kServed +
           "\n    replicas: { urls: [http://127.0.0.1:" + std::to_string(engine.port()) + "] }\n");
  ASSERT_TRUE(wait_until([&] { return num(replica_of(card(w.port), 0).at("offload_capacity_tokens")) > 0; }));
  const auto row = replica_of(card(w.port), 0);
  EXPECT_EQ(num(row.at("kv_capacity_tokens")), 40'000);
  EXPECT_EQ(num(row.at("offload_capacity_tokens")), 7'281 * 16);
  EXPECT_EQ(row.at("offload_gib").to_number<double>(), 16.0);

  Client c(w.port);
  for (const char* session : {"a", "b"}) {
    const auto r = c.post("/v1/chat/completions", chat_body("explain the layout of this project", 4, false),
                          {{"X-Warden-Session", session}});
    ASSERT_EQ(r.status, 200u) << r.body;
  }
  const auto ws = card(w.port).at("working_set").as_object();
  EXPECT_EQ(num(ws.at("conversations")), 2);
  EXPECT_GT(num(ws.at("held_tokens")), 0);
  EXPECT_EQ(num(ws.at("typical_tokens")), num(ws.at("held_tokens")) / 2);
  EXPECT_EQ(num(ws.at("gpu_capacity_tokens")), 40'000);
  EXPECT_EQ(num(ws.at("host_capacity_tokens")), 7'281 * 16);
  EXPECT_EQ(num(ws.at("capacity_tokens")), 40'000 + 7'281 * 16);

  EXPECT_EQ(metric_value(w.port, R"(lm_warden_upstream_offload_capacity_tokens{model="m",replica="0"})"),
            116'496);
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_upstream_kv_capacity_tokens{model="m",replica="0"})"), 40'000);
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_model_active_conversations{model="m"})"), 2);
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_model_working_set_tokens{model="m"})"),
            num(ws.at("held_tokens")));
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_model_offload_capacity_tokens{model="m"})"), 116'496);
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_queue_task_starts{model="m"})"), 0);
}
