#include "gateway/runtime/model_runtime.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace warden::gateway {

protocol::Result<protocol::VllmScrape> scrape_for_model(std::string_view body,
                                                        std::string_view served_model_name) {
  if (!served_model_name.empty()) {
    auto mine = protocol::parse_vllm_metrics(body, served_model_name);
    if (!mine || !mine->ranks.empty()) {
      return mine;
    }
  }
  // No series names this model (an engine serving it under another name): take what is there.
  return protocol::parse_vllm_metrics(body);
}

ModelRuntime::ModelRuntime(const ModelConfig& config, int unhealthy_after, boost::asio::any_io_executor io,
                           core::SplitMixRng& rng)
    : config_(config),
      replica_set_(static_cast<std::size_t>(config.replica_count()), unhealthy_after),
      rng_(rng),
      queue_(
          std::move(io),
          [this](const core::RequestFacts& facts) {
            const core::Time now = std::chrono::steady_clock::now().time_since_epoch();
            return router_.route(facts, replica_set_.metrics(now), now, rng_);
          },
          [this](std::uint64_t tenant) { return router_.tasks_of_tenant(tenant); }) {
  // The configuration reader accepts registered policy names only (config.cpp); a configuration built
  // elsewhere with another name keeps its other settings under the default policy, said in the log.
  if (!set_routing(config.routing)) {
    spdlog::error("model {}: unknown routing policy '{}'; routing with '{}'", config.name,
                  config.routing.policy, core::RoutingConfig{}.policy);
    core::RoutingConfig routing = config.routing;
    routing.policy = core::RoutingConfig{}.policy;
    set_routing(routing);
  }
}

bool ModelRuntime::set_routing(const core::RoutingConfig& routing) {
  if (!router_.set_routing(routing)) {
    return false;
  }
  queue_.configure(router_.routing_config());
  retry_queued();
  return true;
}

void ModelRuntime::retry_queued() {
  if (queue_.size() > 0) {
    queue_.retry(AdmissionQueue::Clock::now());
  }
}

void ModelRuntime::set_max_model_len(const UpstreamUrl& url, std::optional<std::int64_t> value) {
  std::erase_if(max_model_len_, [&](const auto& e) { return e.first == url.text; });
  if (value) {
    max_model_len_.emplace_back(url.text, *value);
  }
}

std::optional<std::int64_t> ModelRuntime::max_model_len() const {
  std::optional<std::int64_t> out;
  for (const auto& [url, len] : max_model_len_) {
    out = out ? std::min(*out, len) : len;
  }
  return out;
}

std::vector<int> replicas_of(const ModelConfig& config, const UpstreamUrl& url) {
  std::vector<int> out;
  for (int i = 0; i < config.replica_count(); ++i) {
    if (config.replica_url(i).text == url.text) {
      out.push_back(i);
    }
  }
  return out;
}

core::Decision ModelRuntime::route(const core::RequestFacts& facts, std::optional<int> avoid, bool counted,
                                   core::Rng& rng, core::Time now) {
  // The live view as is; a copy only to avoid a replica.
  const std::vector<core::ReplicaMetrics>& live = replica_set_.metrics(now);
  std::vector<core::ReplicaMetrics> without_failed;
  if (avoid && *avoid >= 0 && static_cast<std::size_t>(*avoid) < live.size()) {
    without_failed = live;
    without_failed[static_cast<std::size_t>(*avoid)].healthy = false;
  }
  const std::vector<core::ReplicaMetrics>& view = without_failed.empty() ? live : without_failed;
  return counted ? router_.route(facts, view, now, rng) : router_.route_uncounted(facts, view, now, rng);
}

void ModelRuntime::finish(int replica) {
  router_.finish(static_cast<core::ReplicaIndex>(replica));
  retry_queued();
}

void ModelRuntime::first_token(const core::Decision& decision) {
  router_.first_token(decision);
  if (decision.replica) {
    replica_set_.first_token(static_cast<int>(*decision.replica));
  }
}

bool ModelRuntime::apply_scrape(const UpstreamUrl& url, const protocol::VllmScrape& scrape, core::Time now) {
  return replica_set_.apply_scrape(replicas_of(config_, url), config_.data_parallel, scrape,
                                   router_.view(now).prefill_backlog_tokens, now);
}

}  // namespace warden::gateway
