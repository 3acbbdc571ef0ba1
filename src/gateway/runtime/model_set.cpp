#include "gateway/runtime/model_set.hpp"

#include <algorithm>

namespace warden::gateway {

ModelRuntime& ModelSet::add(const ModelConfig& config, int unhealthy_after,
                            const core::OutlierConfig& outlier) {
  served_.push_back(std::make_unique<ModelRuntime>(config, unhealthy_after, io_, rng_));
  served_.back()->replica_set().outliers().configure(outlier);
  return *served_.back();
}

void ModelSet::remove(std::string_view name) {
  const auto it =
      std::find_if(served_.begin(), served_.end(), [&](const auto& m) { return m->config().name == name; });
  if (it == served_.end()) {
    return;
  }
  (*it)->queue().stop();
  removed_.push_back(std::move(*it));
  served_.erase(it);
}

ModelRuntime* ModelSet::find(std::string_view name) {
  const auto it =
      std::find_if(served_.begin(), served_.end(), [&](const auto& m) { return m->config().name == name; });
  return it == served_.end() ? nullptr : it->get();
}

void ModelSet::stop_queues() {
  for (const auto& m : served_) {
    m->queue().stop();
  }
}

}  // namespace warden::gateway
