#include "gateway/runtime/model_runtime.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <limits>

#include "core/rng.hpp"
#include "gateway/admin/admin_json.hpp"

using namespace warden::gateway;
using warden::protocol::parse_vllm_metrics;

namespace {

// The admission queues' timers are never run here; held requests are routed again with `rng`.
boost::asio::io_context io;
warden::core::SplitMixRng rng;

Config config_of(std::string_view yaml) {
  auto r = parse_config(yaml, "t.yaml");
  EXPECT_TRUE(r.ok()) << r.error_text();
  return *r.config;
}

const char* kDp = R"(models:
  - name: m
    served_model_name: served
    max_num_seqs: 32
    replicas: { data_parallel: { url: http://127.0.0.1:9000, size: 2 } }
)";

const char* kUrls = R"(models:
  - name: m
    replicas: { urls: [http://127.0.0.1:9001, http://127.0.0.1:9002] }
)";

std::string rank_metrics(int engine, double running, double waiting, double kv, double queries, double hits) {
  return "vllm:num_requests_running{engine=\"" + std::to_string(engine) + "\",model_name=\"served\"} " +
         std::to_string(running) + "\nvllm:num_requests_waiting{model_name=\"served\",engine=\"" +
         std::to_string(engine) + "\"} " + std::to_string(waiting) + "\nvllm:kv_cache_usage_perc{engine=\"" +
         std::to_string(engine) + "\",model_name=\"served\"} " + std::to_string(kv) +
         "\nvllm:prefix_cache_queries_total{engine=\"" + std::to_string(engine) +
         "\",model_name=\"served\"} " + std::to_string(queries) + "\nvllm:prefix_cache_hits_total{engine=\"" +
         std::to_string(engine) + "\",model_name=\"served\"} " + std::to_string(hits) +
         "\nvllm:cache_config_info{block_size=\"16\",engine=\"" + std::to_string(engine) +
         "\",num_gpu_blocks=\"2500\"} 1.0\n";
}

// Ejection after `failures` in a row, for `base` the first time.
warden::core::OutlierConfig outlier_of(int failures, std::chrono::seconds base) {
  warden::core::OutlierConfig o;
  o.consecutive_failures = failures;
  o.base_ejection = base;
  return o;
}

// The progress watchdog: a stall after `after` of counters standing still.
warden::core::OutlierConfig stall_after(std::chrono::seconds after) {
  warden::core::OutlierConfig o;
  o.stall_after = after;
  return o;
}

// A scrape of replica 0 at second `at`: `running` requests and the token counters at `tokens`.
void scrape_tokens(ModelRuntime& m, const Config& c, double running, double tokens, int at) {
  const std::string text = "vllm:num_requests_running{model_name=\"served\"} " + std::to_string(running) +
                           "\nvllm:prompt_tokens_total{model_name=\"served\"} " + std::to_string(tokens) +
                           "\n";
  m.apply_scrape(c.models[0].urls[0], *parse_vllm_metrics(text, "served"), std::chrono::seconds(at));
}

}  // namespace

TEST(CounterDelta, CountsFromFirstObservationAndSurvivesResets) {
  CounterDelta d;
  d.observe(1000);  // history before the warden started does not count
  EXPECT_EQ(d.delta(), 0);
  d.observe(1100);
  d.observe(1150);
  EXPECT_EQ(d.delta(), 150);
  d.observe(30);  // engine restarted: its counter starts again from zero
  EXPECT_EQ(d.delta(), 180);
  d.observe(-5);  // garbage is ignored
  d.observe(std::numeric_limits<double>::quiet_NaN());
  d.observe(40);
  EXPECT_EQ(d.delta(), 190);
}

// vLLM with CPU KV offload: its connector's hits (tokens loaded, not computed) count as hits, and its
// preemptions are counted since the warden started.
TEST(ModelRuntime, OffloadedHitsCountAsHitsAndPreemptionsAreCounted) {
  Config c = config_of(kDp);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  const auto& url = c.models[0].dp_url;
  auto extra = [](double external, double preempted) {
    return "vllm:external_prefix_cache_hits_total{engine=\"0\",model_name=\"served\"} " +
           std::to_string(external) + "\nvllm:num_preemptions_total{engine=\"0\",model_name=\"served\"} " +
           std::to_string(preempted) + "\n";
  };
  auto s1 = scrape_for_model(rank_metrics(0, 1, 0, 0.5, 1000, 100) + extra(500, 7), "served");
  ASSERT_TRUE(s1);
  m.apply_scrape(url, *s1);
  auto s2 = scrape_for_model(rank_metrics(0, 1, 0, 0.5, 2000, 300) + extra(1000, 10), "served");
  ASSERT_TRUE(s2);
  m.apply_scrape(url, *s2);
  const auto& r0 = m.replica_set().replicas()[0];
  ASSERT_TRUE(r0.prefix_hit_rate());
  EXPECT_DOUBLE_EQ(*r0.prefix_hit_rate(), (200.0 + 500.0) / 1000.0);
  EXPECT_DOUBLE_EQ(r0.preemptions.delta(), 3.0);
  // Computed tokens leave out the loaded ones: 2000 - 300 - 1000.
  ASSERT_TRUE(r0.metrics.computed());
  EXPECT_EQ(*r0.metrics.computed(), 700U);
  EXPECT_EQ(r0.offload_gib, 0.0) << "its cache config names no offload";

  // The cache config names 16 GiB of host memory and the host pool's blocks.
  const std::string offload =
      "vllm:cache_config_info{block_size=\"16\",engine=\"0\",kv_offloading_size=\"16.0\","
      "num_cpu_blocks=\"7281\",num_gpu_blocks=\"2500\"} 1.0\n";
  m.apply_scrape(url, *scrape_for_model(offload, "served"));
  EXPECT_EQ(r0.offload_gib, 16.0);
  EXPECT_EQ(r0.metrics.offload_capacity_tokens, 7281u * 16u);
  EXPECT_EQ(m.replica_set().metrics()[0].offload_capacity_tokens, 7281u * 16u) << "what the Router reads";
}

TEST(ModelRuntime, DataParallelScrapeFillsEachRankAndHitRateSinceStart) {
  Config c = config_of(kDp);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  const auto& url = c.models[0].dp_url;
  // Another model on the same server must not leak in.
  const std::string other = "vllm:num_requests_running{engine=\"0\",model_name=\"other\"} 30\n";
  auto s1 = scrape_for_model(
      other + rank_metrics(0, 3, 1, 0.5, 1000, 900) + rank_metrics(1, 0, 0, 0.1, 50, 0), "served");
  ASSERT_TRUE(s1);
  m.apply_scrape(url, *s1);
  auto s2 = scrape_for_model(
      rank_metrics(0, 2, 0, 0.6, 1400, 1200) + rank_metrics(1, 1, 0, 0.2, 50, 0) + other, "served");
  m.apply_scrape(url, *s2);

  const auto& r0 = m.replica_set().replicas()[0];
  EXPECT_EQ(r0.metrics.running, 2u);
  EXPECT_EQ(r0.metrics.waiting, 0u);
  EXPECT_DOUBLE_EQ(r0.metrics.kv_usage, 0.6);
  EXPECT_EQ(r0.metrics.kv_capacity_tokens, 2500u * 16u);
  EXPECT_EQ(r0.metrics.scrape_generation, 2u);
  ASSERT_TRUE(r0.prefix_hit_rate());
  EXPECT_DOUBLE_EQ(*r0.prefix_hit_rate(), 300.0 / 400.0);         // deltas, not the engine's lifetime totals
  EXPECT_FALSE(m.replica_set().replicas()[1].prefix_hit_rate());  // no query since the warden started
  EXPECT_EQ(m.replica_set().metrics().size(), 2u);
  EXPECT_EQ(m.replica_set().metrics()[1].running, 1u);
  // The lifetime count of computed prompt tokens (queries minus hits), for the core's eviction estimate.
  EXPECT_EQ(r0.metrics.computed(), std::optional<std::uint64_t>(200));
  EXPECT_EQ(m.replica_set().metrics()[1].computed(), std::optional<std::uint64_t>(50));
  // The prefill rate: computed tokens per second over scrape intervals with requests waiting at both ends.
  EXPECT_EQ(r0.metrics.prefill_tokens_per_second, 0.0);
  using std::chrono::seconds;
  m.apply_scrape(url, *scrape_for_model(rank_metrics(0, 2, 3, 0.9, 2000, 1200), "served"), seconds(10));
  m.apply_scrape(url, *scrape_for_model(rank_metrics(0, 2, 3, 0.9, 6000, 1200), "served"), seconds(12));
  EXPECT_GT(r0.metrics.prefill_tokens_per_second, 0.0);
  EXPECT_LE(r0.metrics.prefill_tokens_per_second, 2000.0);  // (6000 - 2000) tokens in 2 s, smoothed
  auto bad = scrape_for_model(rank_metrics(0, 2, 0, 0.6, 100, 1200), "served");  // more hits than queries
  ASSERT_TRUE(bad);
  m.apply_scrape(url, *bad);
  EXPECT_FALSE(m.replica_set().replicas()[0].metrics.computed());

  // An engine that does not label series with the configured name: every series counts.
  auto unnamed = scrape_for_model("vllm:num_requests_running{engine=\"1\",model_name=\"x\"} 5\n", "served");
  ASSERT_TRUE(unnamed);
  ASSERT_EQ(unnamed->ranks.size(), 1u);
  EXPECT_EQ(unnamed->ranks[0].num_requests_running, 5.0);
}

TEST(ModelRuntime, UnhealthyAfterConsecutiveFailuresAndRecoversOnScrape) {
  Config c = config_of(kUrls);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  const auto& u1 = c.models[0].urls[1];
  EXPECT_FALSE(m.replica_set().failed(replicas_of(m.config(), u1), "connect refused"));
  EXPECT_FALSE(m.replica_set().failed(replicas_of(m.config(), u1), "connect refused"));
  EXPECT_TRUE(m.replica_set().replicas()[1].metrics.healthy);
  EXPECT_TRUE(m.replica_set().failed(replicas_of(m.config(), u1), "connect refused"));  // third in a row
  EXPECT_FALSE(m.replica_set().replicas()[1].metrics.healthy);
  EXPECT_TRUE(m.replica_set().replicas()[0].metrics.healthy);  // the other server is not affected
  EXPECT_EQ(m.replica_set().replicas()[1].last_error, "connect refused");
  EXPECT_FALSE(
      m.replica_set().failed(replicas_of(m.config(), u1), "again"));  // already unhealthy: no new transition

  // One engine per server: its series may carry any engine label.
  auto s = parse_vllm_metrics(rank_metrics(0, 4, 2, 0.3, 10, 5), "served");
  m.apply_scrape(u1, *s);
  EXPECT_TRUE(m.replica_set().replicas()[1].metrics.healthy);
  EXPECT_EQ(m.replica_set().replicas()[1].metrics.running, 4u);
  EXPECT_EQ(m.replica_set().replicas()[1].consecutive_failures, 0);
  EXPECT_EQ(m.replica_set().replicas()[0].metrics.running, 0u);
}

// What the routing core reads of an ejected replica: unhealthy, until its probe is out and back.
TEST(ModelRuntime, AnEjectedReplicaReadsAsUnhealthyUntilItsProbeSucceeds) {
  Config c = config_of(kUrls);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  m.replica_set().outliers().configure(outlier_of(2, std::chrono::seconds(10)));
  using std::chrono::seconds;
  EXPECT_FALSE(
      m.replica_set().outliers().request_failed(1, warden::core::OutlierReason::first_byte, seconds(1)));
  EXPECT_TRUE(
      m.replica_set().outliers().request_failed(1, warden::core::OutlierReason::first_byte, seconds(2)));
  EXPECT_FALSE(m.replica_set().metrics(seconds(3))[1].healthy);
  EXPECT_TRUE(m.replica_set().metrics(seconds(3))[0].healthy);
  EXPECT_TRUE(m.replica_set().replicas()[1].metrics.healthy);           // what the scrapes say is kept apart
  EXPECT_FALSE(m.replica_set().outliers().take_probe(1, seconds(11)));  // still in its backoff (until 12 s)
  EXPECT_TRUE(m.replica_set().metrics(seconds(12))[1].healthy);
  EXPECT_TRUE(m.replica_set().outliers().take_probe(1, seconds(12)));
  EXPECT_FALSE(m.replica_set().metrics(seconds(12))[1].healthy);  // one probe at a time
  EXPECT_TRUE(m.replica_set().outliers().request_succeeded(1, seconds(13)));
  EXPECT_TRUE(m.replica_set().metrics(seconds(13))[1].healthy);
  EXPECT_FALSE(m.replica_set().outliers().request_failed(7, warden::core::OutlierReason::first_byte,
                                                         seconds(13)));  // no such replica
}

// The progress watchdog from scrapes: running requests and token counters that stand still for
// stall_after eject the replica; it is probed only once its counters move again.
TEST(ModelRuntime, AStalledEngineIsEjectedAndProbedOnlyOnceItMovesAgain) {
  Config c = config_of(kUrls);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  warden::core::OutlierConfig o = stall_after(std::chrono::seconds(20));
  o.base_ejection = std::chrono::seconds(5);
  m.replica_set().outliers().configure(o);
  scrape_tokens(m, c, 2, 500, 0);
  scrape_tokens(m, c, 2, 500, 19);
  EXPECT_TRUE(m.replica_set().outliers().eject_stalled(std::chrono::seconds(19)).empty());
  scrape_tokens(m, c, 2, 500, 20);
  EXPECT_EQ(m.replica_set().outliers().eject_stalled(std::chrono::seconds(20)), std::vector<int>{0});
  EXPECT_TRUE(m.replica_set().outliers().eject_stalled(std::chrono::seconds(21)).empty());  // once
  EXPECT_EQ(m.replica_set().outliers().state(0).reason(), warden::core::OutlierReason::no_progress);
  scrape_tokens(m, c, 2, 500, 30);
  EXPECT_FALSE(
      m.replica_set().outliers().routable(0, std::chrono::seconds(30)));  // backoff over, still stalled
  scrape_tokens(m, c, 2, 530, 31);
  EXPECT_TRUE(m.replica_set().outliers().routable(0, std::chrono::seconds(31)));
  EXPECT_TRUE(m.replica_set().outliers().take_probe(0, std::chrono::seconds(31)));
}

// The fleet bound: with max_ejection_percent 50 one of two replicas may be out, the other's failures are
// counted and it stays in. Panic: when the one left stops answering its scrapes, the ejected one takes
// requests again rather than none.
TEST(ModelRuntime, NoMoreThanTheBoundIsEjectedAndTooFewLeftRoutesToAll) {
  Config c = config_of(kUrls);
  ModelRuntime m(c.models[0], 1, io.get_executor(), rng);
  m.replica_set().outliers().configure(outlier_of(1, std::chrono::seconds(60)));
  using std::chrono::seconds;
  EXPECT_TRUE(
      m.replica_set().outliers().request_failed(0, warden::core::OutlierReason::first_byte, seconds(1)));
  EXPECT_FALSE(
      m.replica_set().outliers().request_failed(1, warden::core::OutlierReason::first_byte, seconds(2)));
  EXPECT_FALSE(m.replica_set().outliers().state(1).ejected());
  EXPECT_FALSE(m.replica_set().metrics(seconds(3))[0].healthy);
  EXPECT_TRUE(m.replica_set().metrics(seconds(3))[1].healthy);
  ASSERT_TRUE(m.replica_set().replica_failed(1, "connection refused"));  // unhealthy by its scrapes
  EXPECT_TRUE(m.replica_set().metrics(seconds(4))[0].healthy);           // panic: the ejected one, not none
  EXPECT_FALSE(m.replica_set().metrics(seconds(4))[1].healthy);
}

namespace {

// A request of `prompt_tokens` routed to `replica`: its prompt is in the replica's prefill backlog until
// its first token.
warden::core::Decision send(ModelRuntime& m, int replica, std::uint32_t prompt_tokens,
                            warden::core::Time now) {
  warden::core::RequestFacts f;
  f.pin = static_cast<warden::core::ReplicaIndex>(replica);
  f.prompt_tokens = prompt_tokens;
  warden::core::SplitMixRng rng;
  return m.route(f, std::nullopt, true, rng, now);
}

}  // namespace

// A 5,000-token prompt keeps the counters still while it prefills: at the assumed 500 tokens/s, times 3,
// that is 30 s on top of stall_after (20 s) before the watchdog calls it a stall.
TEST(ModelRuntime, ALongPrefillIsNotAStall) {
  Config c = config_of(kUrls);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  m.replica_set().outliers().configure(stall_after(std::chrono::seconds(20)));
  using std::chrono::seconds;
  const auto long_prompt = send(m, 0, 5'000, seconds(0));
  scrape_tokens(m, c, 1, 100, 0);
  scrape_tokens(m, c, 1, 100, 30);
  EXPECT_TRUE(m.replica_set().outliers().eject_stalled(seconds(30)).empty());
  scrape_tokens(m, c, 1, 100, 49);
  EXPECT_TRUE(m.replica_set().outliers().eject_stalled(seconds(49)).empty());
  scrape_tokens(m, c, 1, 100, 50);
  EXPECT_EQ(m.replica_set().outliers().eject_stalled(seconds(50)),
            std::vector<int>{0});  // 3 x its prefill time: a stall after all
  m.first_token(long_prompt);
}

// Twenty pinned prompts of 60,000 tokens on a replica that wedges (it reports them running, its counters
// stand still): at the assumed rate they would excuse 2 hours; the watchdog ejects it at 3 x stall_after.
TEST(ModelRuntime, PinnedLongPromptsNeverHoldTheWatchdogPastThreeStallAfters) {
  Config c = config_of(kUrls);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  m.replica_set().outliers().configure(stall_after(std::chrono::seconds(20)));
  using std::chrono::seconds;
  for (int i = 0; i < 20; ++i) {
    (void)send(m, 0, 60'000, seconds(0));
  }
  scrape_tokens(m, c, 20, 100, 0);
  scrape_tokens(m, c, 20, 100, 59);
  EXPECT_TRUE(m.replica_set().outliers().eject_stalled(seconds(59)).empty());
  scrape_tokens(m, c, 20, 100, 60);
  EXPECT_EQ(m.replica_set().outliers().eject_stalled(seconds(60)), std::vector<int>{0});
}

// An engine that hangs while it reports `running 0`: the warden's own request there, still without its
// first token, is the evidence; stall_after (plus its small prompt's prefill time) ejects the replica.
TEST(ModelRuntime, AHangReportedAsNothingRunningIsAStall) {
  Config c = config_of(kUrls);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  m.replica_set().outliers().configure(stall_after(std::chrono::seconds(20)));
  using std::chrono::seconds;
  scrape_tokens(m, c, 0, 100, 0);
  send(m, 0, 100, seconds(1));
  scrape_tokens(m, c, 0, 100, 1);
  scrape_tokens(m, c, 0, 100, 21);
  EXPECT_TRUE(m.replica_set().outliers().eject_stalled(seconds(21)).empty());  // 20 s + 0.6 s of prefill
  scrape_tokens(m, c, 0, 100, 22);
  EXPECT_EQ(m.replica_set().outliers().eject_stalled(seconds(22)), std::vector<int>{0});
}

// The same hang on an engine that exports no token counters: the warden's own requests there are its
// work, their first tokens its progress. One answered keeps it in; one that waits past stall_after ejects
// it.
TEST(ModelRuntime, AHangWithoutTokenCountersIsAStall) {
  Config c = config_of(kUrls);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  m.replica_set().outliers().configure(stall_after(std::chrono::seconds(20)));
  using std::chrono::seconds;
  const auto scrape = [&](int at) {
    m.apply_scrape(c.models[0].urls[0],
                   *parse_vllm_metrics("vllm:num_requests_running{model_name=\"served\"} 0\n", "served"),
                   seconds(at));
  };
  const auto answered = send(m, 0, 100, seconds(0));
  scrape(0);
  scrape(15);
  m.first_token(answered);
  send(m, 0, 100, seconds(16));
  scrape(16);
  scrape(36);
  EXPECT_TRUE(m.replica_set().outliers().eject_stalled(seconds(36)).empty())
      << "20 s since the last first token, + prefill";
  scrape(37);
  EXPECT_EQ(m.replica_set().outliers().eject_stalled(seconds(37)), std::vector<int>{0});
}

TEST(ModelRuntime, HostileMetricValuesAreClamped) {
  Config c = config_of(kDp);
  ModelRuntime m(c.models[0], 1, io.get_executor(), rng);
  auto s = parse_vllm_metrics(
      "vllm:num_requests_running{engine=\"0\",model_name=\"served\"} -4\n"
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"served\"} NaN\n"
      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"served\"} 7.5\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"served\"} +Inf\n",
      "served");
  ASSERT_TRUE(s);
  m.apply_scrape(c.models[0].dp_url, *s);
  EXPECT_EQ(m.replica_set().replicas()[0].metrics.running, 0u);
  EXPECT_EQ(m.replica_set().replicas()[0].metrics.waiting, 0u);
  EXPECT_DOUBLE_EQ(m.replica_set().replicas()[0].metrics.kv_usage, 1.0);
  EXPECT_EQ(m.replica_set().replicas()[1].metrics.running, 0u);
}

TEST(AdminJson, ModelCardHasEveryFieldOfTheRoutingCard) {
  Config c = config_of(kDp);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  warden::core::SplitMixRng rng(1);
  warden::core::RequestFacts facts;
  facts.session = warden::core::SessionKey{42};
  const auto t = std::chrono::seconds(100);
  auto d = m.route(facts, std::nullopt, true, rng, t);
  ASSERT_TRUE(d.ok());
  auto card = model_card(m, t, 1795944011);
  EXPECT_EQ(card.at("name").as_string(), "m");
  EXPECT_EQ(card.at("served_model_name").as_string(), "served");
  EXPECT_EQ(card.at("mode").as_string(), "data_parallel");
  EXPECT_EQ(card.at("since").as_string(), "2026-11-29T09:20:11Z");
  const auto& routing = card.at("routing").as_object();
  EXPECT_TRUE(routing.at("affinity").as_bool());
  EXPECT_EQ(routing.at("spill_threshold").as_string(), "auto")
      << "the setting, as the routing table writes it";
  EXPECT_EQ(routing.at("spill_threshold_resolved").to_number<int>(), 8);
  EXPECT_EQ(routing.at("spill_label").as_string(), "8 (auto)");
  EXPECT_EQ(routing.at("in_flight").to_number<int>(), 1);
  const auto& reps = routing.at("replicas").as_array();
  ASSERT_EQ(reps.size(), 2u);
  const auto& chosen = reps[*d.replica].as_object();
  EXPECT_EQ(chosen.at("new").to_number<int>(), 1);
  EXPECT_EQ(chosen.at("in_flight").to_number<int>(), 1);
  for (const char* key : {"index", "in_flight", "new", "sticky", "spilled_in", "client_pinned", "running",
                          "waiting", "kv_used", "prefix_hit_rate", "healthy"}) {
    EXPECT_TRUE(chosen.contains(key)) << key;
  }
  EXPECT_TRUE(chosen.at("prefix_hit_rate").is_null());
  EXPECT_FALSE(chosen.at("ejected").as_bool());
  EXPECT_TRUE(chosen.at("ejection").is_null());
}

// The card's working set: this warden's conversations and those other wardens report, against the GPU
// caches and host offload of the healthy replicas; the admission queue's held task starts.
TEST(AdminJson, ModelCardHasTheWorkingSetAgainstTheCaches) {
  Config c = config_of(kDp);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  const std::string caches =
      "vllm:cache_config_info{block_size=\"16\",engine=\"0\",kv_offloading_size=\"16.0\","
      "num_cpu_blocks=\"7281\",num_gpu_blocks=\"2500\"} 1.0\n"
      "vllm:cache_config_info{block_size=\"16\",engine=\"1\",kv_offloading_size=\"16.0\","
      "num_gpu_blocks=\"2500\"} 1.0\n";
  m.apply_scrape(c.models[0].dp_url, *scrape_for_model(caches, "served"));
  warden::core::SplitMixRng rng(1);
  const auto t = std::chrono::seconds(100);
  for (std::uint64_t session : {1, 2, 3}) {
    warden::core::RequestFacts facts;
    facts.session = warden::core::SessionKey{session};
    facts.prompt_tokens = 30'000;
    const auto d = m.route(facts, std::nullopt, true, rng, t);
    ASSERT_TRUE(d.ok());
    m.finish(static_cast<int>(*d.replica));
  }
  m.replica_set().set_peer_load(1, 0, 1, 20'000, 0);  // another warden's conversation there

  auto card = model_card(m, t, 1795944011, {5, 2});
  const auto& ws = card.at("working_set").as_object();
  EXPECT_EQ(ws.at("conversations").to_number<int>(), 4);
  EXPECT_EQ(ws.at("held_tokens").to_number<int>(), 110'000);
  EXPECT_EQ(ws.at("typical_tokens").to_number<int>(), 27'500);
  EXPECT_EQ(ws.at("gpu_capacity_tokens").to_number<int>(), 80'000);
  EXPECT_EQ(ws.at("host_capacity_tokens").to_number<int>(), 7281 * 16) << "rank 1 names GiB but no tokens";
  EXPECT_EQ(ws.at("capacity_tokens").to_number<int>(), 80'000 + 7281 * 16);
  const auto& rows = card.at("routing").at("replicas").as_array();
  EXPECT_EQ(rows[0].at("offload_capacity_tokens").to_number<int>(), 7281 * 16);
  EXPECT_EQ(rows[1].at("offload_capacity_tokens").to_number<int>(), 0);
  EXPECT_EQ(rows[1].at("offload_gib").to_number<double>(), 16.0);
  EXPECT_EQ(card.at("routing").at("admission").at("queued").to_number<int>(), 5);
  EXPECT_EQ(card.at("routing").at("admission").at("queued_task_starts").to_number<int>(), 2);

  m.replica_set().engine({0}, false, "exited");  // its cache is out of reach; its conversations still count
  card = model_card(m, t, 1795944011);
  EXPECT_EQ(card.at("working_set").at("gpu_capacity_tokens").to_number<int>(), 40'000);
  EXPECT_EQ(card.at("working_set").at("host_capacity_tokens").to_number<int>(), 0);
  EXPECT_EQ(card.at("working_set").at("held_tokens").to_number<int>(), 110'000);
}

// An ejected replica's row says why and until when (unix ms from the steady clock's backoff end).
TEST(AdminJson, AnEjectedReplicaShowsItsEjection) {
  Config c = config_of(kDp);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  m.replica_set().outliers().configure(outlier_of(1, std::chrono::seconds(30)));
  const auto t = std::chrono::seconds(100);
  ASSERT_TRUE(m.replica_set().outliers().request_failed(1, warden::core::OutlierReason::stream_stall, t));
  const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto card = model_card(m, t, 1795944011);
  const auto& row = card.at("routing").at("replicas").as_array().at(1).as_object();
  EXPECT_TRUE(row.at("ejected").as_bool());
  const auto& e = row.at("ejection").as_object();
  EXPECT_EQ(e.at("reason").as_string(), "stream_stall");
  EXPECT_EQ(e.at("ejections").to_number<int>(), 1);
  EXPECT_FALSE(e.at("probing").as_bool());
  const auto until = e.at("until_unix_ms").to_number<std::int64_t>();
  EXPECT_GE(until, before + 30000);
  EXPECT_LT(until, before + 31000);
  EXPECT_TRUE(card.at("routing").at("replicas").as_array().at(0).at("ejection").is_null());
}

TEST(AdminJson, StatsAndModelsShapes) {
  StatsStore s(std::chrono::seconds(3600));
  RequestRecord r;
  r.prompt_tokens = 100;
  r.cached_tokens = 75;
  r.completion_tokens = 3;
  s.record("m", 500, r);
  auto j = stats_json("m", s.series("m", 501, 3), 3);
  EXPECT_EQ(j.at("series").at("t").as_array().size(), 3u);
  EXPECT_EQ(j.at("series").at("prompt_cached").as_array()[1].to_number<int>(), 75);
  EXPECT_DOUBLE_EQ(j.at("summary").at("cache_hit_rate").as_double(), 0.75);

  Config c = config_of(kDp);
  auto models = v1_models_json(c, 10);
  EXPECT_EQ(models.at("object").as_string(), "list");
  EXPECT_EQ(models.at("data").as_array()[0].at("id").as_string(), "m");
  EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00Z");
}

// A model's routing changes in one place: its admission queue's bound follows, and the requests the queue
// holds are routed again under the new rules (here every replica has room: the held request goes).
TEST(ModelRuntime, TheAdmissionQueueFollowsTheRouting) {
  Config c = config_of(kUrls);
  ModelRuntime m(c.models[0], 3, io.get_executor(), rng);
  warden::core::RoutingConfig routing = m.routing();
  routing.admission.max_queue = 1;
  ASSERT_TRUE(m.set_routing(routing));
  const auto now = AdmissionQueue::Clock::now();
  const auto held = m.queue().join({}, now);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(m.queue().join({}, now), nullptr) << "max_queue 1 holds one request";
  routing.admission.max_queue = 2;
  ASSERT_TRUE(m.set_routing(routing));
  EXPECT_EQ(held->outcome, AdmissionQueue::Outcome::routed);
  EXPECT_TRUE(held->decision.ok());
  EXPECT_EQ(m.queue().size(), 0u);
  EXPECT_NE(m.queue().join({}, now), nullptr);
  EXPECT_NE(m.queue().join({}, now), nullptr);
  EXPECT_EQ(m.queue().join({}, now), nullptr) << "max_queue 2 holds two";
}
