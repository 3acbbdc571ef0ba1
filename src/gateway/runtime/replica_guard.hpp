// A replica gone bad and the requests on it. The requests waiting for a replica's first byte are recalled
// when it is marked unhealthy or ejected (they go elsewhere at once, as after a refused connect), and the
// streams relaying from it are cut with an error event when it is ejected as stalled. The outcome of each
// proxied request and the progress watchdog's judgement after a scrape feed the model's outlier ejection
// (ReplicaOutliers); an ejection is logged and counted. Not thread-safe: owned by the gateway's I/O thread.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "core/outlier.hpp"
#include "gateway/runtime/waiting_requests.hpp"
#include "gateway/runtime/warden_metrics.hpp"

namespace warden::gateway {

class ModelRuntime;

class ReplicaGuard {
 public:
  explicit ReplicaGuard(WardenMetrics& metrics) : metrics_(metrics) {}

  // `recall` waits on `replica` of `m` for its first byte (it is recalled when the replica is marked
  // unhealthy or ejected), or relays a stream from it (recalled when the replica is ejected as stalled),
  // until the returned entry is destroyed.
  WaitingRequests::Entry await_first_byte(const ModelRuntime& m, int replica, net::Recall& recall) {
    return waiting_.add(m, replica, recall);
  }
  WaitingRequests::Entry relay(const ModelRuntime& m, int replica, net::Recall& recall) {
    return relaying_.add(m, replica, recall);
  }
  // `replicas` of `m` were just marked unhealthy (`why`): the requests waiting for their first byte go
  // elsewhere.
  void replicas_down(const ModelRuntime& m, const std::vector<int>& replicas, std::string_view why);
  // A request's outcome on `replica`: a failure, or nullopt: a success.
  void outcome(ModelRuntime& m, int replica, std::optional<core::OutlierReason> failure);
  // The progress watchdog after a scrape of `m`: a replica whose engine makes no progress is ejected.
  void judge_progress(ModelRuntime& m);

 private:
  void ejected(ModelRuntime& m, int replica, core::Time now);

  WardenMetrics& metrics_;
  WaitingRequests waiting_;   // requests waiting for a replica's first byte
  WaitingRequests relaying_;  // streams relaying from a replica: cut with an error event if it stalls
};

}  // namespace warden::gateway
