#include "sim/balancer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace warden::sim {

Balancer::Balancer(int num_ranks, int index, int client_count, double refresh_interval)
    : num_ranks_(std::max(1, num_ranks)),
      // vLLM's eng_start_index: API server k of K starts its scan at N * k / K, spreading the starts.
      start_(num_ranks > 0 ? (num_ranks * index / std::max(1, client_count)) % num_ranks : 0),
      client_count_(static_cast<std::uint32_t>(std::max(1, client_count))),
      refresh_interval_(refresh_interval > 0 ? refresh_interval : 0.1),
      view_(static_cast<std::size_t>(num_ranks_)) {}

int Balancer::pick(double now, const std::function<RankLoad(int)>& live) {
  auto epoch = static_cast<long long>(std::floor(now / refresh_interval_));
  if (epoch != epoch_) {
    // A new coordinator publication: the local adjustments made since the last one are dropped.
    epoch_ = epoch;
    for (int r = 0; r < num_ranks_; ++r) {
      view_[static_cast<std::size_t>(r)] = live(r);
    }
  }
  std::uint64_t best_score = std::numeric_limits<std::uint64_t>::max();
  int best = start_;
  for (int i = 0; i < num_ranks_; ++i) {
    int r = (start_ + i) % num_ranks_;
    const RankLoad& l = view_[static_cast<std::size_t>(r)];
    std::uint64_t score = 4ull * l.waiting + l.running;
    if (score < best_score) {
      best_score = score;
      best = r;
    }
  }
  view_[static_cast<std::size_t>(best)].waiting += client_count_;
  return best;
}

}  // namespace warden::sim
