#include "gateway/runtime/working_set.hpp"

#include "gateway/runtime/model_runtime.hpp"

namespace warden::gateway {

WorkingSet add_up(std::span<const ReplicaWorkingSet> replicas) {
  WorkingSet out;
  for (const ReplicaWorkingSet& r : replicas) {
    out.conversations += r.conversations;
    out.held_tokens += r.held_tokens;
    if (r.healthy) {
      out.gpu_tokens += r.gpu_tokens;
      out.host_tokens += r.host_tokens;
    }
  }
  return out;
}

std::vector<ReplicaWorkingSet> replica_working_sets(const ModelRuntime& model, const core::RouterView& view,
                                                    bool peers) {
  std::vector<ReplicaWorkingSet> out;
  out.reserve(model.replica_set().replicas().size());
  for (std::size_t i = 0; i < model.replica_set().replicas().size(); ++i) {
    const core::ReplicaMetrics& m = model.replica_set().replicas()[i].metrics;
    const core::ReplicaSessions s = i < view.sessions.size() ? view.sessions[i] : core::ReplicaSessions{};
    ReplicaWorkingSet r;
    r.healthy = m.healthy;
    r.conversations = s.active_conversations + (peers ? m.peer_active_conversations : 0);
    r.held_tokens = s.held_tokens + (peers ? m.peer_held_tokens : 0);
    r.gpu_tokens = m.kv_capacity_tokens;
    r.host_tokens = m.offload_capacity_tokens;
    out.push_back(r);
  }
  return out;
}

}  // namespace warden::gateway
