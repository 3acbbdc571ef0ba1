#include "gateway/runtime/warden_metrics.hpp"

#include <gtest/gtest.h>

using namespace warden::gateway;

TEST(WardenMetrics, RendersCountersHistogramAndGauges) {
  WardenMetrics m;
  RequestRecord r;
  r.model = "q\"m";
  r.replica = 2;
  r.route = "sticky";
  r.status = 200;
  r.prompt_tokens = 100;
  r.cached_tokens = 75;
  r.completion_tokens = 12;
  r.ttfb_s = 0.3;
  m.request_done(r);
  m.request_done(r);
  RequestRecord bad;
  bad.status = 400;
  m.request_done(bad);
  m.scrape_error("http://127.0.0.1:1");
  m.scrape_ok("http://127.0.0.1:2");

  const std::string text = m.render({{"q\"m", 2, 3, false, 4, 1, 0.5}});
  for (const char* want : {
           "lm_warden_requests_total{model=\"q\\\"m\",replica=\"2\",route=\"sticky\",status=\"200\"} 2\n",
           "lm_warden_requests_total{model=\"\",replica=\"none\",route=\"none\",status=\"400\"} 1\n",
           "lm_warden_requests_in_flight{model=\"q\\\"m\",replica=\"2\"} 3\n",
           "lm_warden_upstream_healthy{model=\"q\\\"m\",replica=\"2\"} 0\n",
           "lm_warden_ttfb_seconds_bucket{model=\"q\\\"m\",le=\"0.25\"} 0\n",
           "lm_warden_ttfb_seconds_bucket{model=\"q\\\"m\",le=\"0.5\"} 2\n",
           "lm_warden_ttfb_seconds_bucket{model=\"q\\\"m\",le=\"+Inf\"} 2\n",
           "lm_warden_ttfb_seconds_count{model=\"q\\\"m\"} 2\n",
           "lm_warden_prompt_tokens_total{model=\"q\\\"m\",kind=\"cached\"} 150\n",
           "lm_warden_prompt_tokens_total{model=\"q\\\"m\",kind=\"computed\"} 50\n",
           "lm_warden_completion_tokens_total{model=\"q\\\"m\"} 24\n",
           "lm_warden_scrape_errors_total{url=\"http://127.0.0.1:1\"} 1\n",
           "lm_warden_scrape_errors_total{url=\"http://127.0.0.1:2\"} 0\n",
           "# TYPE lm_warden_ttfb_seconds histogram\n",
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing: " << want << "\n" << text;
  }
}

TEST(WardenMetrics, EjectionsAreCountedByReasonAndShownPerReplica) {
  WardenMetrics m;
  m.replica_ejected("m", 1, "first_byte");
  m.replica_ejected("m", 1, "first_byte");
  m.replica_ejected("m", 1, "no_progress");
  ReplicaGauges in{"m", 0};
  ReplicaGauges out{"m", 1};
  out.ejected = true;
  const std::string text = m.render({in, out});
  for (const char* want : {
           "lm_warden_replica_ejections_total{model=\"m\",replica=\"1\",reason=\"first_byte\"} 2\n",
           "lm_warden_replica_ejections_total{model=\"m\",replica=\"1\",reason=\"no_progress\"} 1\n",
           "lm_warden_replica_ejected{model=\"m\",replica=\"0\"} 0\n",
           "lm_warden_replica_ejected{model=\"m\",replica=\"1\"} 1\n",
           "# TYPE lm_warden_replica_ejections_total counter\n",
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing: " << want << "\n" << text;
  }
}

TEST(WardenMetrics, WorkingSetAndCachesPerReplicaAndPerModel) {
  WardenMetrics m;
  ReplicaGauges r0{"m", 0};
  r0.conversations = 3;
  r0.working_set_tokens = 120'000;
  r0.kv_capacity_tokens = 134'456;
  r0.offload_capacity_tokens = 116'496;
  ReplicaGauges r1{"m", 1};  // its engine has not reported a cache yet
  ModelGauges known;
  known.model = "m";
  known.conversations = 3;
  known.working_set_tokens = 120'000;
  known.kv_capacity_tokens = 134'456;
  known.offload_capacity_tokens = 116'496;
  known.queue_length = 4;
  known.queue_task_starts = 3;
  ModelGauges early;
  early.model = "early";
  early.conversations = 2;
  early.working_set_tokens = 9'000;
  const std::string text = m.render({r0, r1}, {known, early});
  for (const char* want : {
           "# TYPE lm_warden_working_set_tokens gauge\n",
           "lm_warden_working_set_tokens{model=\"m\",replica=\"0\"} 120000\n",
           "lm_warden_working_set_tokens{model=\"m\",replica=\"1\"} 0\n",
           "lm_warden_active_conversations{model=\"m\",replica=\"0\"} 3\n",
           "lm_warden_upstream_kv_capacity_tokens{model=\"m\",replica=\"0\"} 134456\n",
           "lm_warden_upstream_kv_capacity_tokens{model=\"m\",replica=\"1\"} 0\n",
           "lm_warden_upstream_offload_capacity_tokens{model=\"m\",replica=\"0\"} 116496\n",
           "# TYPE lm_warden_model_working_set_tokens gauge\n",
           "lm_warden_model_working_set_tokens{model=\"m\"} 120000\n",
           "lm_warden_model_working_set_tokens{model=\"early\"} 9000\n",
           "lm_warden_model_active_conversations{model=\"early\"} 2\n",
           "lm_warden_model_kv_capacity_tokens{model=\"m\"} 134456\n",
           "lm_warden_model_offload_capacity_tokens{model=\"m\"} 116496\n",
           "lm_warden_queue_length{model=\"m\"} 4\n",
           "lm_warden_queue_task_starts{model=\"m\"} 3\n",
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing: " << want << "\n" << text;
  }
  // Capacities are left out until the engines reported a GPU cache, so an alert comparing the working set
  // with them does not fire on a warden that has not scraped yet.
  EXPECT_EQ(text.find("lm_warden_model_kv_capacity_tokens{model=\"early\"}"), std::string::npos);
  EXPECT_EQ(text.find("lm_warden_model_offload_capacity_tokens{model=\"early\"}"), std::string::npos);
}

TEST(WardenMetrics, EscapesLabelValues) {
  EXPECT_EQ(prometheus_escape("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}
