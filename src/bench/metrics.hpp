// What the bench takes from the engines' /metrics at each poll: busy ranks and prefix-cache counters.
#pragma once

#include <optional>
#include <vector>

#include "protocol/prometheus.hpp"
#include "report/row.hpp"

namespace warden::bench {

struct MetricsSample {
  int ranks = 0;       // engine ranks seen over every endpoint
  int busy_ranks = 0;  // of those, ranks with vllm:num_requests_running > 0
  // Sum over ranks of vllm:prefix_cache_{hits,queries}_total; none if any rank lacks them.
  std::optional<report::PrefixCounters> prefix;
};

// Folds the scrapes of every endpoint (one per replica with external LB, or one with N DP ranks).
MetricsSample summarize(const std::vector<protocol::VllmScrape>& scrapes);

}  // namespace warden::bench
