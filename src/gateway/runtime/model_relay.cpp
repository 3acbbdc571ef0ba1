// ModelRuntime's side of a reload: the entry's names and routing, and a changed replica list
// (docs/config.md, "Reloading").
#include "gateway/runtime/model_runtime.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace warden::gateway {

std::string replica_identity(const ModelConfig& config, int index) {
  return config.data_parallel ? fmt::format("{} rank {}", config.dp_url.text, index)
                              : config.replica_url(index).text;
}

namespace {

std::vector<std::string> identities(const ModelConfig& config) {
  std::vector<std::string> out;
  for (int i = 0; i < config.replica_count(); ++i) {
    out.push_back(replica_identity(config, i));
  }
  return out;
}

}  // namespace

void ModelRuntime::update_entry(const ModelConfig& next) {
  static_cast<ModelEntry&>(config_) = next;  // taken whole
}

core::ReplicaRemap ModelRuntime::relay(const ModelConfig& next) {
  core::ReplicaRemap remap = core::remap_by_identity(identities(config_), identities(next));
  static_cast<ModelReplicas&>(config_) = next;  // relaid only without a launch: section (reload_plan.cpp)
  if (remap.identity()) {
    return remap;
  }
  replica_set_.remap(remap);
  router_.remap_replicas(remap);
  // The context length of a URL no longer served stops counting.
  std::erase_if(max_model_len_, [&](const auto& e) {
    return std::none_of(config_.urls.begin(), config_.urls.end(),
                        [&](const UpstreamUrl& u) { return u.text == e.first; }) &&
           !(config_.data_parallel && config_.dp_url.text == e.first);
  });
  remaps_.push_back(remap);
  return remap;
}

std::optional<int> ModelRuntime::follow(int replica, std::uint64_t since) const {
  std::optional<int> at = replica;
  for (std::size_t g = since; g < remaps_.size() && at; ++g) {
    const auto& to = remaps_[g].to;
    if (*at < 0 || static_cast<std::size_t>(*at) >= to.size() || !to[static_cast<std::size_t>(*at)]) {
      return std::nullopt;
    }
    at = static_cast<int>(*to[static_cast<std::size_t>(*at)]);
  }
  return at;
}

}  // namespace warden::gateway
