#include "whatif/kv_sense.hpp"

#include "core/kv_apply.hpp"
#include "engine/kv_wire.hpp"
#include "protocol/kv_events.hpp"

namespace warden::whatif {

KvSense::KvSense(std::size_t replicas) : indexes_(replicas) {
  for (core::KvIndex& index : indexes_) {
    index.set_complete(true);
  }
}

void KvSense::step(std::uint32_t replica, std::span<const engine::KvEvent> events, double ts) {
  if (events.empty() || replica >= indexes_.size()) {
    return;
  }
  const std::string payload =
      protocol::kv::encode(engine::to_wire(events, ts, static_cast<std::int64_t>(replica)));
  ++stats_.batches;
  stats_.bytes += payload.size();
  auto batch = protocol::kv::decode(payload);
  if (!batch) {
    ++stats_.decode_errors;
    return;
  }
  const core::KvApplied applied = core::apply_events(*batch, indexes_[replica]);
  stats_.stored_blocks += applied.stored_blocks;
  stats_.removed_blocks += applied.removed_blocks;
}

void KvSense::sent(std::uint32_t replica, std::uint64_t thread, bool anew) {
  if (replica < indexes_.size() && thread != 0) {
    indexes_[replica].sent(thread, anew);
  }
}

void KvSense::restarted(std::uint32_t replica) {
  if (replica < indexes_.size()) {
    indexes_[replica].cleared();
  }
}

void KvSense::attach(std::span<core::ReplicaMetrics> metrics) const {
  for (std::size_t i = 0; i < metrics.size() && i < indexes_.size(); ++i) {
    metrics[i].kv = &indexes_[i];
  }
}

}  // namespace warden::whatif
