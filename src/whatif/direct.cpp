#include "whatif/direct.hpp"

#include <fmt/core.h>

#include "base/splitmix.hpp"
#include "whatif/fleet.hpp"
#include "whatif/sim_types.hpp"

namespace warden::whatif {

namespace {

constexpr std::uint64_t kDirectStream = 0xD1EC7;
constexpr std::uint64_t kPinSalt = 0x0D1EC7C11E47ULL;

}  // namespace

DirectClient::DirectClient(const SimulationConfig& config, const Fleet& fleet)
    : config_(config), fleet_(fleet), rng_(level_seed(config.seed, kDirectStream, 0)) {}

void DirectClient::start_level(std::size_t level, double now) {
  rng_ = core::SplitMixRng(level_seed(config_.seed, kDirectStream, level));
  balancer_.reset();
  next_publish_ = kInf;
  if (config_.direct.share > 0 && config_.direct.rule == SimulationConfig::DirectRule::vllm_lb) {
    balancer_.emplace(config_.replicas, config_.vllm_api_servers, config_.routing.vllm_balancer);
    publish(now);
  }
}

void DirectClient::route(Flight& f) {
  if (balancer_) {
    const core::BalancerPick pick = balancer_->route(rng_);
    f.replica = pick.rank;
    f.api_server = pick.server;
    return;
  }
  f.replica = static_cast<std::uint32_t>(base::splitmix64(f.thread_session ^ kPinSalt) % config_.replicas);
}

void DirectClient::finish(const Flight& f) {
  if (balancer_) {
    balancer_->finish(f.api_server, f.replica);
  }
}

void DirectClient::publish(double now) {
  if (!balancer_) {
    return;
  }
  const std::vector<core::RankLoad> loads = fleet_.live_loads();
  balancer_->publish(loads);
  next_publish_ = now + config_.vllm_publish_interval;
}

std::string DirectClient::session_id(std::uint64_t thread_key) {
  return fmt::format("direct-{:x}", thread_key);
}

}  // namespace warden::whatif
