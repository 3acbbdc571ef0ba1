// Router::remap_replicas(): the routing state of a model whose replica list a reload changed.
#include "core/router.hpp"

namespace warden::core {

void Router::remap_replicas(const ReplicaRemap& remap) {
  if (remap.identity()) {
    return;
  }
  sessions_.remap_homes(remap.to, gone_replica);
  tasks_.remap(remap);
  counters_.remap(remap);
  // A remaining replica keeps its scrape mark (its poller's count goes on), a new one starts unscraped.
  sent_since_scrape_ = remap_values(remap, std::move(sent_since_scrape_), std::uint32_t{0});
  scrape_generation_ = remap_values(remap, std::move(scrape_generation_), std::uint64_t{0});
  prefill_backlog_ = remap_values(remap, std::move(prefill_backlog_), std::uint64_t{0});
}

}  // namespace warden::core
