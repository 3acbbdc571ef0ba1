#include "core/vllm_balancer.hpp"

#include <algorithm>
#include <limits>

#include "core/decide.hpp"

namespace warden::core {

VllmBalancer::VllmBalancer(std::uint32_t ranks, std::uint32_t api_servers, VllmBalancerModel model)
    : ranks_(std::max(1U, ranks)), model_(model) {
  const std::uint32_t count = api_servers == 0 ? ranks_ : api_servers;
  servers_.resize(count);
  for (std::uint32_t s = 0; s < count; ++s) {
    Server& server = servers_[s];
    server.view.assign(ranks_, RankLoad{});
    server.in_flight.assign(ranks_, 0);
    server.start = static_cast<std::uint32_t>(static_cast<std::uint64_t>(ranks_) * s / count);
  }
}

void VllmBalancer::publish(std::span<const RankLoad> loads) {
  for (auto& server : servers_) {
    for (std::uint32_t r = 0; r < ranks_ && r < loads.size(); ++r) {
      server.view[r] = loads[r];
    }
  }
}

ReplicaIndex VllmBalancer::route_via(std::uint32_t server_index) {
  Server& server = servers_.at(server_index);
  const auto clients = static_cast<double>(servers_.size());
  // vLLM keeps the first strict minimum in scan order (no tie epsilon: its scores are exact sums).
  double best = std::numeric_limits<double>::infinity();
  ReplicaIndex chosen = server.start;
  for (std::uint32_t i = 0; i < ranks_; ++i) {
    const auto rank = static_cast<ReplicaIndex>((server.start + i) % ranks_);
    const RankLoad& load = server.view[rank];
    const double score =
        vllm_lb_score(model_, VllmLbLoad{static_cast<double>(load.waiting), static_cast<double>(load.running),
                                         clients * server.in_flight[rank], load.kv_usage});
    if (score < best) {
      best = score;
      chosen = rank;
    }
  }
  server.view[chosen].waiting += static_cast<std::uint32_t>(servers_.size());
  ++server.in_flight[chosen];
  if (model_ == VllmBalancerModel::current) {
    server.start = (server.start + 1) % ranks_;  // ties no longer favour one rank
  }
  return chosen;
}

void VllmBalancer::finish(std::uint32_t server, ReplicaIndex rank) {
  std::uint32_t& count = servers_.at(server).in_flight.at(rank);
  count = count > 0 ? count - 1 : 0;
}

BalancerPick VllmBalancer::route(Rng& rng) {
  const auto server = static_cast<std::uint32_t>(rng.uniform(servers_.size()));
  return BalancerPick{server, route_via(server)};
}

}  // namespace warden::core
