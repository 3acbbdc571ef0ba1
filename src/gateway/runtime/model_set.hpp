// The models the warden serves, each with its runtime, and the ones a reload removed: requests in flight
// still point at a removed model's runtime, so it is kept (its admission queue stopped) until the warden
// ends. Not thread-safe: owned by the gateway's I/O thread.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "core/outlier.hpp"
#include "core/rng.hpp"
#include "gateway/config/config.hpp"
#include "gateway/runtime/model_runtime.hpp"

namespace warden::gateway {

class ModelSet {
 public:
  // The runtimes' admission queues run on `io` and route with `rng` (the gateway's one generator).
  ModelSet(boost::asio::any_io_executor io, core::SplitMixRng& rng) : io_(std::move(io)), rng_(rng) {}

  // A model served from now on (at start, and for a model a reload adds).
  ModelRuntime& add(const ModelConfig& config, int unhealthy_after, const core::OutlierConfig& outlier);
  // No longer served (a reload): new requests find no such model, the ones its admission queue holds are
  // refused as when draining, the ones in flight complete against its runtime.
  void remove(std::string_view name);
  ModelRuntime* find(std::string_view name);
  // The models served, in the order of the configuration.
  ModelRuntimes& served() { return served_; }
  const ModelRuntimes& served() const { return served_; }
  // The admission queues refuse what they hold and every new request (drain, stop).
  void stop_queues();

 private:
  boost::asio::any_io_executor io_;
  core::SplitMixRng& rng_;
  ModelRuntimes served_;
  ModelRuntimes removed_;
};

}  // namespace warden::gateway
