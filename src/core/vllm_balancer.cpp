#include "core/vllm_balancer.hpp"

#include <algorithm>

#include "core/decide.hpp"

namespace warden::core {

namespace {

// vLLM scans from its start index and keeps the first strict minimum: over the rotated snapshot that is
// the first tie, i.e. tie index 0.
class FirstTie final : public Rng {
 public:
  std::uint64_t uniform(std::uint64_t) override { return 0; }
};

}  // namespace

VllmBalancer::VllmBalancer(std::uint32_t ranks, std::uint32_t api_servers) : ranks_(std::max(1U, ranks)) {
  const std::uint32_t servers = api_servers == 0 ? ranks_ : api_servers;
  views_.assign(servers, std::vector<RankLoad>(ranks_));
  snapshot_.affinity = false;
  snapshot_.replicas.resize(ranks_);
}

std::uint32_t VllmBalancer::start_index(std::uint32_t server) const {
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(ranks_) * server / views_.size());
}

void VllmBalancer::publish(std::span<const RankLoad> loads) {
  for (auto& view : views_) {
    for (std::uint32_t r = 0; r < ranks_ && r < loads.size(); ++r) {
      view[r] = loads[r];
    }
  }
}

ReplicaIndex VllmBalancer::route_via(std::uint32_t server) {
  auto& view = views_.at(server);
  const std::uint32_t start = start_index(server);
  for (std::uint32_t i = 0; i < ranks_; ++i) {
    const RankLoad& load = view[(start + i) % ranks_];
    ReplicaState& state = snapshot_.replicas[i];
    state = ReplicaState{};
    state.waiting = load.waiting;
    state.running = load.running;
  }
  FirstTie first;
  const Decision d = decide_balanced(snapshot_, RequestFacts{}, first);
  const auto rank = static_cast<ReplicaIndex>((start + d.replica.value_or(0)) % ranks_);
  view[rank].waiting += static_cast<std::uint32_t>(views_.size());
  return rank;
}

ReplicaIndex VllmBalancer::route(Rng& rng) {
  return route_via(static_cast<std::uint32_t>(rng.uniform(views_.size())));
}

}  // namespace warden::core
