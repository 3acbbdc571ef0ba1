// `lm-warden sim` on the hybrid rtx5090-qwen3.6-27b preset, started with vLLM's rtx_5090 recipe line:
// vllm:cache_config_info reports the padded block and the pool the engine runs with, and the host offload
// the warden reads (kv_offloading_size, kv_cache_memory_bytes); prefix hits over HTTP are whole 1,568-token
// blocks.

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <string>

#include "protocol/prometheus.hpp"
#include "sim/sim_args.hpp"
#include "support/child_process.hpp"
#include "support/http.hpp"

namespace json = boost::json;
using test_support::ChildProcess;
using test_support::Client;

namespace {

using sim_test::kModel;

// vLLM's rtx_5090 recipe line, then `extra`.
std::vector<std::string> recipe(const std::vector<std::string>& extra) {
  std::vector<std::string> args{"--time-scale",
                                "1000",
                                "--preset",
                                "rtx5090-qwen3.6-27b",
                                "--max-model-len",
                                "131072",
                                "--max-num-seqs",
                                "4",
                                "--kv-cache-dtype",
                                "fp8",
                                "--max-num-batched-tokens",
                                "4096",
                                "--gpu-memory-utilization",
                                "0.95",
                                "--enable-prefix-caching"};
  args.insert(args.end(), extra.begin(), extra.end());
  return sim_test::sim_args(args);
}

std::int64_t cached_tokens(int port, const json::array& prompt) {
  Client c(port);
  const json::object body{{"model", kModel}, {"prompt", prompt}, {"max_tokens", 1}};
  const auto r = c.post("/v1/completions", json::serialize(body));
  EXPECT_EQ(r.status, 200u) << r.body;
  return json::parse(r.body).at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64();
}

}  // namespace

TEST(SimHybrid, CacheConfigInfoCarriesTheBlockThePoolAndTheOffload) {
  // --kv-cache-memory-bytes of exactly 100 blocks of 1,568 tokens x 32,768 B: the pool, and the bytes the
  // warden prices the host offload at.
  ChildProcess sim(recipe({"--data-parallel-size", "2", "--kv-offloading-size", "16",
                           "--kv-cache-memory-bytes", std::to_string(100LL * 1568 * 32768)}));
  const int port = sim.wait_for_port();
  Client c(port);
  const auto res = c.get("/metrics");
  ASSERT_EQ(res.status, 200u);
  const auto vllm = warden::protocol::parse_vllm_metrics(res.body);
  ASSERT_TRUE(vllm.has_value());
  ASSERT_EQ(vllm->ranks.size(), 2u);
  for (const auto& r : vllm->ranks) {
    EXPECT_EQ(r.block_size, 1568);
    EXPECT_EQ(r.num_gpu_blocks, 100);
    EXPECT_EQ(r.num_cpu_blocks, 0);  // as vLLM V1 reports it, whatever it offloads
    EXPECT_EQ(r.kv_offloading_gib, 16.0);
    EXPECT_EQ(r.kv_cache_memory_bytes, 100LL * 1568 * 32768);
  }
  EXPECT_NE(res.body.find("cache_dtype=\"fp8\""), std::string::npos);
  EXPECT_NE(res.body.find("kv_offloading_size=\"16.0\""), std::string::npos);
  EXPECT_NE(res.body.find("mamba_page_size_padded=\"3211264\""), std::string::npos);
  EXPECT_EQ(sim.stop(), 0);
}

TEST(SimHybrid, KvCacheDtypeAutoHalvesTheBlock) {
  ChildProcess sim(recipe({"--kv-cache-dtype", "auto"}));
  const int port = sim.wait_for_port();
  const auto vllm = warden::protocol::parse_vllm_metrics(Client(port).get("/metrics").body);
  ASSERT_TRUE(vllm.has_value());
  EXPECT_EQ(vllm->ranks.at(0).block_size, 784);
  EXPECT_EQ(vllm->ranks.at(0).num_gpu_blocks, 107);  // sized from the card: the same bytes, half the tokens
  EXPECT_EQ(vllm->ranks.at(0).kv_offloading_gib, 0.0);                // "None": off
  EXPECT_FALSE(vllm->ranks.at(0).kv_cache_memory_bytes.has_value());  // "None"
  EXPECT_EQ(sim.stop(), 0);
}

TEST(SimHybrid, PrefixHitsAreWholeBlocks) {
  ChildProcess sim(recipe({}));
  const int port = sim.wait_for_port();
  json::array prompt;
  for (int i = 0; i < 3500; ++i) {
    prompt.emplace_back(1000 + i);
  }
  EXPECT_EQ(cached_tokens(port, prompt), 0);
  EXPECT_EQ(cached_tokens(port, prompt), 2 * 1568);            // 3,500 tokens hold 2 whole blocks
  json::array shorter(prompt.begin(), prompt.begin() + 1568);  // the last block of a prompt is never hit
  EXPECT_EQ(cached_tokens(port, shorter), 0);
  json::array longer(prompt.begin(), prompt.begin() + 1569);
  EXPECT_EQ(cached_tokens(port, longer), 1568);
  EXPECT_EQ(sim.stop(), 0);
}
