#include "protocol/prometheus.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace warden::protocol {
namespace {

// The DP=2 sample from interfaces.md, verbatim.
const std::string kDp2 =
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 1.0\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.41\n"
    "# TYPE vllm:prefix_cache_queries_total counter\n"
    "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 18432.0\n"
    "# TYPE vllm:prefix_cache_hits_total counter\n"
    "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 12288.0\n"
    "# TYPE vllm:cache_config_info gauge\n"
    "vllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\",engine=\"0\","
    "gpu_memory_utilization=\"0.9\",num_gpu_blocks=\"2500\"} 1.0\n";

struct Flat {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value;
  std::optional<std::int64_t> ts;
  bool operator==(const Flat& o) const {
    return name == o.name && labels == o.labels && ts == o.ts &&
           (value == o.value || (std::isnan(value) && std::isnan(o.value)));
  }
};

std::vector<Flat> parse_split(std::string_view text, std::vector<std::size_t> cuts,
                              PromStats* stats = nullptr) {
  PromParser p;
  std::vector<Flat> out;
  auto on = [&](const PromSample& s) {
    Flat f{s.name, {}, s.value, s.timestamp_ms};
    for (const auto& l : s.labels) {
      f.labels.emplace_back(l.name, l.value);
    }
    out.push_back(std::move(f));
  };
  std::size_t pos = 0;
  cuts.push_back(text.size());
  for (std::size_t c : cuts) {
    EXPECT_TRUE(p.feed(text.substr(pos, c - pos), on));
    pos = c;
  }
  EXPECT_TRUE(p.finish(on));
  if (stats != nullptr) {
    *stats = p.stats();
  }
  return out;
}

TEST(PrometheusTest, Dp2SampleExactly) {
  auto r = parse_vllm_metrics(kDp2);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->ranks.size(), 2u);
  const VllmRank& r0 = r->ranks[0];
  EXPECT_EQ(r0.engine, 0);
  EXPECT_EQ(r0.num_requests_running, 3.0);
  EXPECT_EQ(r0.num_requests_waiting, std::nullopt);
  EXPECT_EQ(r0.kv_cache_usage_perc, 0.41);
  EXPECT_EQ(r0.prefix_cache_queries_total, 18432.0);
  EXPECT_EQ(r0.prefix_cache_hits_total, 12288.0);
  EXPECT_EQ(r0.block_size, 16);
  EXPECT_EQ(r0.num_gpu_blocks, 2500);
  const VllmRank* r1 = r->rank(1);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(r1->num_requests_running, 1.0);
  EXPECT_EQ(r1->kv_cache_usage_perc, std::nullopt);
  EXPECT_EQ(r1->block_size, std::nullopt);
  EXPECT_EQ(r->rank(2), nullptr);
  EXPECT_EQ(r->stats.samples, 6u);
  EXPECT_EQ(r->stats.garbage_lines, 0u);
}

TEST(PrometheusTest, EverySplitPoint) {
  const auto whole = parse_split(kDp2, {});
  ASSERT_EQ(whole.size(), 6u);
  for (std::size_t cut = 0; cut <= kDp2.size(); ++cut) {
    EXPECT_EQ(parse_split(kDp2, {cut}), whole) << cut;
  }
  std::vector<std::size_t> every;
  for (std::size_t i = 1; i < kDp2.size(); ++i) {
    every.push_back(i);
  }
  EXPECT_EQ(parse_split(kDp2, every), whole);
}

TEST(PrometheusTest, LabelsAnyOrderEscapesValuesTimestamps) {
  const std::string text =
      "# HELP x_total Some \\\\ help\\n text\n"
      "# TYPE x_total counter\n"
      "x_total{b=\"q\\\"uote\",a=\"back\\\\slash\",c=\"new\\nline\",} 1.5e3 1700000000000\n"
      "y NaN\n"
      "y{l=\"1\"} +Inf\n"
      "y{l=\"2\"} -Inf\n"
      "y{ l = \"3\" }\t-2.5E-2\n"
      "z{} 7 -5\r\n"
      "last 42";  // no final newline
  PromParser p;
  std::vector<PromSample> got;
  auto on = [&](const PromSample& s) { got.push_back(s); };
  ASSERT_TRUE(p.feed(text, on));
  ASSERT_TRUE(p.finish(on));
  ASSERT_EQ(got.size(), 7u);
  EXPECT_EQ(got[0].name, "x_total");
  EXPECT_EQ(got[0].label("a"), "back\\slash");
  EXPECT_EQ(got[0].label("b"), "q\"uote");
  EXPECT_EQ(got[0].label("c"), "new\nline");
  EXPECT_EQ(got[0].label("d"), std::nullopt);
  EXPECT_EQ(got[0].value, 1500.0);
  EXPECT_EQ(got[0].timestamp_ms, 1700000000000);
  EXPECT_TRUE(std::isnan(got[1].value));
  EXPECT_TRUE(std::isinf(got[2].value) && got[2].value > 0);
  EXPECT_TRUE(std::isinf(got[3].value) && got[3].value < 0);
  EXPECT_EQ(got[4].label("l"), "3");
  EXPECT_DOUBLE_EQ(got[4].value, -0.025);
  EXPECT_EQ(got[5].timestamp_ms, -5);
  EXPECT_TRUE(got[5].labels.empty());
  EXPECT_EQ(got[6].name, "last");
  EXPECT_EQ(got[6].value, 42.0);
  EXPECT_EQ(p.type_of("x_total"), PromType::counter);
  EXPECT_EQ(p.type_of("y"), PromType::untyped);
  EXPECT_EQ(p.help_of("x_total"), "Some \\ help\n text");
  EXPECT_EQ(p.stats().garbage_lines, 0u);
}

TEST(PrometheusTest, GarbageLinesAreSkippedAndCounted) {
  const std::string text =
      "good 1\n"
      "bad{a=\"x\\q\"} 1\n"  // bad escape
      "bad{a=\"unterminated} 1\n"
      "bad{a=x} 1\n"
      "bad 1 2 3\n"
      "bad notanumber\n"
      "bad{a=\"1\"}2\n"  // no space before the value
      "9bad 1\n"
      "\x01\x02\xff\xfe binary\n"
      "# TYPE broken nosuchtype\n"
      "{a=\"1\"} 3\n"
      "good{a=\"2\"} 2\n";
  PromStats stats;
  auto got = parse_split(text, {5, 40}, &stats);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].value, 2.0);
  EXPECT_EQ(stats.garbage_lines, 10u);
}

TEST(PrometheusTest, CommentLinesDeclareTypesAndHelpOrAreSkipped) {
  const std::string text =
      "# a plain comment is neither a sample nor garbage\n"
      "#TYPE  tight\tgauge\n"  // no blank after '#', blanks of both kinds between the words
      "# HELP odd keeps \\q and a trailing \\\n"
      "# HELP h_total \n"     // empty help
      "# TYPE\n"              // no family: garbage
      "# TYPE untyped_one\n"  // no type: garbage
      "# EOF\n"
      "tight 1\n";
  PromLimits limits;
  PromParser p(limits);
  int n = 0;
  auto on = [&](const PromSample&) { ++n; };
  ASSERT_TRUE(p.feed(text, on));
  ASSERT_TRUE(p.finish(on));
  EXPECT_EQ(n, 1);
  EXPECT_EQ(p.type_of("tight"), PromType::gauge);
  EXPECT_EQ(p.help_of("odd"), "keeps \\q and a trailing \\");
  EXPECT_EQ(p.help_of("h_total"), "");
  EXPECT_EQ(p.help_of("tight"), std::nullopt);
  EXPECT_EQ(p.type_of("untyped_one"), PromType::untyped);
  EXPECT_EQ(p.stats().garbage_lines, 2u);
  EXPECT_EQ(p.stats().lines, 8u);
}

TEST(PrometheusTest, DeclaredFamiliesAreBounded) {
  PromLimits limits;
  limits.max_series = 3;  // at most 2 * 3 TYPE and HELP entries
  PromParser p(limits);
  std::string text;
  for (int i = 0; i < 10; ++i) {
    text += "# TYPE f" + std::to_string(i) + " counter\n";
  }
  auto on = [](const PromSample&) {};
  ASSERT_TRUE(p.feed(text, on));
  EXPECT_EQ(p.type_of("f5"), PromType::counter);
  EXPECT_EQ(p.type_of("f6"), PromType::untyped);
  EXPECT_EQ(p.stats().garbage_lines, 4u);
}

TEST(PrometheusTest, OversizedLinesSkippedWithoutBuffering) {
  PromLimits limits;
  limits.max_line_bytes = 100;
  PromParser p(limits);
  int n = 0;
  auto on = [&](const PromSample&) { ++n; };
  ASSERT_TRUE(p.feed("a 1\nhuge{l=\"", on));
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(p.feed(std::string(1000, 'x'), on));
  }
  ASSERT_TRUE(p.feed("\"} 1\nb 2\n", on));
  ASSERT_TRUE(p.finish(on));
  EXPECT_EQ(n, 2);
  EXPECT_EQ(p.stats().oversized_lines, 1u);
}

TEST(PrometheusTest, SeriesCapIsAnError) {
  PromLimits limits;
  limits.max_series = 10;
  std::string text;
  for (int i = 0; i < 20; ++i) {
    text += "s{i=\"" + std::to_string(i) + "\"} 1\n";
  }
  auto r = parse_prometheus(text, limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), Errc::prom_too_many_series);
}

TEST(PrometheusTest, RandomGarbageNeverCrashes) {
  std::uint64_t x = 0x2545F4914F6CDD1Dull;
  const std::string alphabet = "{}\"\\=, \n\r\t#abcXYZ_:019.eE+-NaInf\x00\xff";
  for (int round = 0; round < 300; ++round) {
    std::string text;
    for (int i = 0; i < 2000; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      text += alphabet[x % alphabet.size()];
    }
    PromLimits limits;
    limits.max_line_bytes = 256;
    limits.max_series = 50;
    PromParser p(limits);
    VllmScrapeBuilder b;
    auto on = [&](const PromSample& s) { b.add(s); };
    std::size_t pos = 0;
    while (pos < text.size()) {
      const std::size_t n = 1 + (x >> 33) % 50;
      if (!p.feed(std::string_view(text).substr(pos, n), on)) {
        break;
      }
      pos += n;
      x = x * 6364136223846793005ull + 1442695040888963407ull;
    }
    (void)p.finish(on);
    EXPECT_LE(p.stats().samples, 50u);
    (void)b.take();
  }
}

TEST(PrometheusTest, HostileEngineLabelsStayBounded) {
  std::string text;
  for (int i = 0; i < 20000; ++i) {
    text += "vllm:num_requests_running{engine=\"" + std::to_string(i * 7919) + "\"} 1\n";
  }
  text +=
      "vllm:num_requests_running{engine=\"-1\"} "
      "1\nvllm:num_requests_running{engine=\"99999999999999999999\"} 1\n";
  auto r = parse_vllm_metrics(text);
  ASSERT_TRUE(r);
  // Engines 0, 7919, 15838, ... below 4096: only engine 0 qualifies.
  ASSERT_EQ(r->ranks.size(), 1u);
  EXPECT_EQ(r->ranks[0].engine, 0);
  EXPECT_EQ(r->skipped_samples, 20001u);
}

TEST(PrometheusTest, ModelFilterKeepsTheUnlabelledCacheConfigInfo) {
  // As vLLM exports it: cache_config_info has an engine label but no model_name.
  const std::string text =
      "vllm:num_requests_running{engine=\"0\",model_name=\"qwen\"} 2\n"
      "vllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\",engine=\"0\","
      "gpu_memory_utilization=\"0.9\",num_gpu_blocks=\"2500\"} 1.0\n"
      "vllm:cache_config_info{block_size=\"32\",engine=\"0\",model_name=\"other\",num_gpu_blocks=\"7\"} "
      "1.0\n";
  auto r = parse_vllm_metrics(text, "qwen");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->ranks.size(), 1u);
  EXPECT_EQ(r->ranks[0].num_requests_running, 2.0);
  EXPECT_EQ(r->ranks[0].block_size, 16);  // the one naming another model is still skipped
  EXPECT_EQ(r->ranks[0].num_gpu_blocks, 2500);
  EXPECT_EQ(r->skipped_samples, 1u);
}

TEST(PrometheusTest, CacheConfigInfoCarriesTheHostOffload) {
  // vLLM writes every CacheConfig field as a label, unset ones as "None".
  const std::string text =
      "vllm:cache_config_info{block_size=\"1568\",engine=\"0\",kv_offloading_size=\"16.0\","
      "kv_offloading_backend=\"native\",num_cpu_blocks=\"0\",kv_cache_memory_bytes=\"None\","
      "num_gpu_blocks=\"95\"} 1.0\n"
      "vllm:cache_config_info{block_size=\"16\",engine=\"1\",kv_offloading_size=\"None\","
      "num_cpu_blocks=\"7281\",kv_cache_memory_bytes=\"4294967296\",num_gpu_blocks=\"2500\"} 1.0\n"
      "vllm:cache_config_info{block_size=\"16\",engine=\"2\",kv_offloading_size=\"-3\","
      "num_cpu_blocks=\"many\",kv_cache_memory_bytes=\"-1\",num_gpu_blocks=\"2500\"} 1.0\n"
      "vllm:cache_config_info{block_size=\"16\",engine=\"3\",num_gpu_blocks=\"2500\"} 1.0\n";
  auto r = parse_vllm_metrics(text);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->ranks.size(), 4u);
  EXPECT_EQ(r->ranks[0].kv_offloading_gib, 16.0);
  EXPECT_EQ(r->ranks[0].num_cpu_blocks, 0);
  EXPECT_EQ(r->ranks[0].kv_cache_memory_bytes, std::nullopt) << "None";
  EXPECT_EQ(r->ranks[1].kv_offloading_gib, 0.0) << "None: off";
  EXPECT_EQ(r->ranks[1].num_cpu_blocks, 7281);
  EXPECT_EQ(r->ranks[1].kv_cache_memory_bytes, 4294967296);
  EXPECT_EQ(r->ranks[2].kv_offloading_gib, std::nullopt) << "garbage is not a size";
  EXPECT_EQ(r->ranks[2].num_cpu_blocks, std::nullopt);
  EXPECT_EQ(r->ranks[2].kv_cache_memory_bytes, std::nullopt);
  EXPECT_EQ(r->ranks[3].kv_offloading_gib, std::nullopt) << "an older vLLM without the field";
}

TEST(PrometheusTest, VllmFourRanksModelFilterLegacyNames) {
  std::string text;
  for (int e = 3; e >= 0; --e) {  // ranks out of order, labels in varying order
    const std::string en = std::to_string(e);
    text +=
        "vllm:num_requests_running{model_name=\"qwen\",engine=\"" + en + "\"} " + std::to_string(e) + "\n";
    text += "vllm:num_requests_waiting{engine=\"" + en + "\",model_name=\"qwen\"} " + std::to_string(10 * e) +
            "\n";
    text += "vllm:gpu_cache_usage_perc{engine=\"" + en + "\",model_name=\"qwen\"} 0.5\n";
    text += "vllm:prompt_tokens_total{engine=\"" + en + "\",model_name=\"qwen\"} 1e6\n";
    text += "vllm:generation_tokens_total{engine=\"" + en + "\",model_name=\"qwen\"} 2.5e4\n";
    text += "vllm:gpu_prefix_cache_queries_total{engine=\"" + en + "\",model_name=\"qwen\"} 100\n";
    text += "vllm:prefix_cache_hits_total{engine=\"" + en + "\",model_name=\"qwen\"} 60\n";
    text += "vllm:prefix_cache_hits_created{engine=\"" + en + "\",model_name=\"qwen\"} 1.7e9\n";
    text += "vllm:num_requests_running{model_name=\"other\",engine=\"" + en + "\"} 99\n";
    text += "vllm:cache_config_info{num_gpu_blocks=\"" + std::to_string(1000 + e) + "\",engine=\"" + en +
            "\",block_size=\"32\",model_name=\"qwen\"} 1.0\n";
  }
  text += "vllm:kv_cache_usage_perc{engine=\"2\",model_name=\"qwen\"} 0.75\n";
  text += "vllm:num_requests_running{engine=\"x\",model_name=\"qwen\"} 5\n";
  text += "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"qwen\"} 3\n";
  auto r = parse_vllm_metrics(text, "qwen");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->ranks.size(), 4u);
  for (int e = 0; e < 4; ++e) {
    const VllmRank& rk = r->ranks[static_cast<std::size_t>(e)];
    EXPECT_EQ(rk.engine, e);
    EXPECT_EQ(rk.num_requests_running, e);
    EXPECT_EQ(rk.num_requests_waiting, 10 * e);
    EXPECT_EQ(rk.kv_cache_usage_perc, e == 2 ? 0.75 : 0.5);  // current name beats the deprecated one
    EXPECT_EQ(rk.prefix_cache_queries_total, 100.0);
    EXPECT_EQ(rk.prefix_cache_hits_total, 60.0);
    EXPECT_EQ(rk.prompt_tokens_total, 1e6);
    EXPECT_EQ(rk.generation_tokens_total, 2.5e4);
    EXPECT_EQ(rk.block_size, 32);
    EXPECT_EQ(rk.num_gpu_blocks, 1000 + e);
  }
  EXPECT_EQ(r->skipped_samples, 5u);  // 4 other-model samples + 1 bad engine label
  auto all = parse_vllm_metrics(text);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->ranks[0].num_requests_running, 99.0);  // no filter: the later series wins
}

TEST(PrometheusTest, VllmPreemptionsPerRank) {
  // As vLLM exports it: a counter per engine with its _created gauge; rank 1 has no series at all.
  const std::string text =
      "# TYPE vllm:num_preemptions_total counter\n"
      "vllm:num_preemptions_total{engine=\"0\",model_name=\"qwen\"} 12.0\n"
      "vllm:num_preemptions_total{model_name=\"qwen\",engine=\"2\"} 0.0\n"
      "vllm:num_preemptions_total{engine=\"3\",model_name=\"other\"} 99.0\n"
      "vllm:num_preemptions_created{engine=\"0\",model_name=\"qwen\"} 1.7e9\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"qwen\"} 1\n";
  auto r = parse_vllm_metrics(text, "qwen");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->ranks.size(), 3u);
  EXPECT_EQ(r->rank(0)->num_preemptions_total, 12.0);  // not the _created timestamp
  EXPECT_FALSE(r->rank(1)->num_preemptions_total.has_value());
  EXPECT_EQ(r->rank(2)->num_preemptions_total, 0.0);
  EXPECT_EQ(r->rank(3), nullptr);  // another model's series
}

TEST(PrometheusTest, VllmExternalPrefixCacheHitsPerRank) {
  // vLLM with a KV connector (CPU offload): tokens loaded instead of computed, beside the GPU cache's hits.
  const std::string text =
      "# TYPE vllm:external_prefix_cache_hits_total counter\n"
      "vllm:external_prefix_cache_hits_total{engine=\"0\",model_name=\"qwen\"} 4096.0\n"
      "vllm:external_prefix_cache_queries_total{engine=\"0\",model_name=\"qwen\"} 9000.0\n"
      "vllm:external_prefix_cache_hits_created{engine=\"0\",model_name=\"qwen\"} 1.7e9\n"
      "vllm:prefix_cache_hits_total{engine=\"1\",model_name=\"qwen\"} 10.0\n";
  auto r = parse_vllm_metrics(text, "qwen");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->ranks.size(), 2u);
  EXPECT_EQ(r->rank(0)->external_prefix_cache_hits_total, 4096.0);
  EXPECT_FALSE(r->rank(0)->prefix_cache_hits_total.has_value());
  EXPECT_FALSE(r->rank(1)->external_prefix_cache_hits_total.has_value());
}

}  // namespace
}  // namespace warden::protocol
