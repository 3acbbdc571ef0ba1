#include "gateway/warden_metrics.hpp"

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

TEST(WardenMetrics, EscapesLabelValues) {
  EXPECT_EQ(prometheus_escape("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}
