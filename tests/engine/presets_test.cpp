#include "engine/presets.hpp"
#include "engine/config_check.hpp"

#include <gtest/gtest.h>

namespace warden::engine {
namespace {

TEST(Presets, KnownNamesValidate) {
  EXPECT_EQ(preset_names(),
            (std::vector<std::string>{"a4000-qwen3-4b", "h200-qwen3-4b", "rtx5090-qwen3.6-27b", "instant"}));
  for (const auto& name : preset_names()) {
    const auto p = find_preset(name);
    ASSERT_TRUE(p) << name;
    EXPECT_EQ(p->preset, name);
    EXPECT_TRUE(validate(*p)) << name;
  }
  EXPECT_FALSE(find_preset("a100"));
}

TEST(Presets, DeriveNumGpuBlocks) {
  StepTimeModel m;  // Qwen3-4B: 8.04 GB weights, 147,456 B of KV per token
  // 16 GiB * 0.9 = 15.462 GB; minus weights and a 1.5225 GB reserve = 5.899 GB = 2,500.x blocks of 16.
  EXPECT_EQ(derive_num_gpu_blocks(16.0 * 1024 * 1024 * 1024, 0.9, 1.5225e9, 16, m), 2500U);
  EXPECT_EQ(derive_num_gpu_blocks(8e9, 0.9, 0, 16, m), 0U);  // weights do not even fit
}

TEST(Presets, SetParamAcceptsFlagAndYamlSpellings) {
  EngineConfig c = *find_preset("a4000-qwen3-4b");
  ASSERT_TRUE(set_param(c, "num-gpu-blocks", "2000"));
  ASSERT_TRUE(set_param(c, "mem_bandwidth", " 5e11 "));
  ASSERT_TRUE(set_param(c, "step-overhead", "0.002"));
  EXPECT_EQ(c.num_gpu_blocks, 2000U);
  EXPECT_DOUBLE_EQ(c.time.mem_bandwidth, 5e11);
  EXPECT_DOUBLE_EQ(c.time.step_overhead, 0.002);
  const auto unknown = set_param(c, "num_gpu_blockz", "1");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("num_gpu_blockz"), std::string::npos);
  EXPECT_FALSE(set_param(c, "max_num_seqs", "-3"));
  EXPECT_FALSE(set_param(c, "max_num_seqs", "3.5"));
  EXPECT_FALSE(set_param(c, "max_num_seqs", "99999999999"));
  EXPECT_FALSE(set_param(c, "mem_efficiency", "fast"));
  EXPECT_FALSE(set_param(c, "mem_efficiency", ""));
  ASSERT_TRUE(set_param(c, "kv-offloading-size", "16"));
  EXPECT_DOUBLE_EQ(c.kv_offloading_size, 16.0);
  EXPECT_EQ(param_names().size(), 36U);
}

TEST(Presets, SchedulingPolicyIsAWord) {
  EngineConfig c = *find_preset("a4000-qwen3-4b");
  EXPECT_EQ(c.scheduling_policy, SchedulingPolicy::fcfs);  // vLLM's default
  ASSERT_TRUE(set_param(c, "scheduling-policy", " priority"));
  EXPECT_EQ(c.scheduling_policy, SchedulingPolicy::priority);
  const auto bad = set_param(c, "scheduling_policy", "1");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().param, "scheduling_policy");
  EXPECT_EQ(c.scheduling_policy, SchedulingPolicy::priority);  // unchanged by the refused value
  const auto back = parse_preset_yaml(to_yaml(c), *find_preset("instant"));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->scheduling_policy, SchedulingPolicy::priority);
}

TEST(Presets, YamlOverridesOnABase) {
  const auto r =
      parse_preset_yaml("num_gpu_blocks: 1200\nmax-num-seqs: 8\nname: small\n", *find_preset("instant"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->num_gpu_blocks, 1200U);
  EXPECT_EQ(r->max_num_seqs, 8U);
  EXPECT_EQ(r->preset, "small");
  EXPECT_DOUBLE_EQ(r->time.step_overhead, 1e-4);  // kept from the base

  const auto h = parse_preset_yaml("max_num_seqs: 64\npreset: h200-qwen3-4b\n", *find_preset("instant"));
  ASSERT_TRUE(h);
  EXPECT_DOUBLE_EQ(h->time.mem_bandwidth, 4.8e12);
  EXPECT_EQ(h->max_num_seqs, 64U);  // applied after the preset, whatever the key order
}

TEST(Presets, YamlErrorsNameTheProblem) {
  const EngineConfig base = *find_preset("a4000-qwen3-4b");
  const auto unknown = parse_preset_yaml("num_gpu_blocks: 10\nwarp_speed: 9\n", base);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("warp_speed"), std::string::npos);
  EXPECT_FALSE(parse_preset_yaml("num_gpu_blocks: [1, 2]\n", base));
  EXPECT_FALSE(parse_preset_yaml("num_gpu_blocks: 0\n", base));  // fails validate()
  EXPECT_FALSE(parse_preset_yaml("- a\n- b\n", base));
  EXPECT_FALSE(parse_preset_yaml("a: [", base));
  EXPECT_FALSE(parse_preset_yaml("preset: nope\n", base));
  EXPECT_TRUE(parse_preset_yaml("", base));
}

TEST(Presets, YamlRoundTrip) {
  EngineConfig c = *find_preset("h200-qwen3-4b");
  ASSERT_TRUE(set_param(c, "compute_efficiency", "0.55"));
  const auto back = parse_preset_yaml(to_yaml(c), *find_preset("instant"));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(to_yaml(*back), to_yaml(c));
  EXPECT_EQ(back->num_gpu_blocks, c.num_gpu_blocks);
  EXPECT_DOUBLE_EQ(back->time.compute_efficiency, 0.55);
}

TEST(Presets, ValidateRejectsNonsense) {
  EngineConfig c = *find_preset("instant");
  c.time.mem_efficiency = 1.5;
  EXPECT_FALSE(validate(c));
  c = *find_preset("instant");
  c.max_num_seqs = 0;
  EXPECT_FALSE(validate(c));
  c = *find_preset("instant");
  c.block_size = 0;
  EXPECT_FALSE(validate(c));
  c = *find_preset("instant");
  c.reserve_full_prompt = 2;  // a switch: 0 or 1
  EXPECT_FALSE(validate(c));
  c = *find_preset("instant");
  c.kv_watermark = 1.0;  // nothing could ever be admitted beside a running request
  EXPECT_FALSE(validate(c));
}

}  // namespace
}  // namespace warden::engine
