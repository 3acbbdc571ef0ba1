#include "bench/metrics.hpp"

namespace warden::bench {

MetricsSample summarize(const std::vector<protocol::VllmScrape>& scrapes) {
  MetricsSample s;
  report::PrefixCounters prefix;
  bool prefix_complete = true;
  for (const protocol::VllmScrape& scrape : scrapes) {
    for (const protocol::VllmRank& rank : scrape.ranks) {
      ++s.ranks;
      if (rank.num_requests_running.value_or(0.0) > 0.0) {
        ++s.busy_ranks;
      }
      if (rank.all_prefix_hits() && rank.prefix_cache_queries_total) {
        prefix.hits += *rank.all_prefix_hits();
        prefix.queries += *rank.prefix_cache_queries_total;
      } else {
        prefix_complete = false;
      }
    }
  }
  if (s.ranks > 0 && prefix_complete) {
    s.prefix = prefix;
  }
  return s;
}

}  // namespace warden::bench
