#include "core/counters.hpp"

namespace warden::core {

void ModelCounters::ensure(std::size_t count) {
  if (replicas_.size() < count) {
    replicas_.resize(count);
  }
}

namespace {

std::uint64_t& route_counter(ReplicaCounters& c, Route route) {
  switch (route) {
    case Route::new_conversation:
      return c.new_conversations;
    case Route::sticky:
      return c.sticky;
    case Route::spilled:
      return c.spilled_in;
    case Route::pinned:
      return c.client_pinned;
    case Route::balanced:
      return c.balanced;
    case Route::rehomed:
      return c.rehomed_in;
    case Route::failover:
    case Route::queued:  // never has a replica: counted by ModelCounters::record as queued
      break;
  }
  return c.failover;
}

}  // namespace

void ModelCounters::record(const Decision& decision) {
  if (decision.queued()) {
    ++queued_;
    return;
  }
  if (!decision.replica) {
    ++unrouted_;
    return;
  }
  ensure(static_cast<std::size_t>(*decision.replica) + 1);
  ReplicaCounters& c = replicas_[*decision.replica];
  ++c.in_flight;
  ++route_counter(c, decision.route);
}

void ModelCounters::retract(const Decision& decision) {
  if (!decision.replica || *decision.replica >= replicas_.size()) {
    return;
  }
  std::uint64_t& n = route_counter(replicas_[*decision.replica], decision.route);
  if (n > 0) {
    --n;
  }
}

void ModelCounters::finish(ReplicaIndex replica) {
  if (replica < replicas_.size() && replicas_[replica].in_flight > 0) {
    --replicas_[replica].in_flight;
  }
}

namespace {

// `c`'s routed counts added into `into` (in_flight is live, not a count).
void add_routed(ReplicaCounters& into, const ReplicaCounters& c) {
  into.new_conversations += c.new_conversations;
  into.sticky += c.sticky;
  into.spilled_in += c.spilled_in;
  into.rehomed_in += c.rehomed_in;
  into.client_pinned += c.client_pinned;
  into.balanced += c.balanced;
  into.failover += c.failover;
}

}  // namespace

void ModelCounters::remap(const ReplicaRemap& remap) {
  for (std::size_t i = 0; i < remap.to.size() && i < replicas_.size(); ++i) {
    if (!remap.to[i]) {
      add_routed(removed_, replicas_[i]);
    }
  }
  replicas_ = remap_values(remap, std::move(replicas_), ReplicaCounters{});
}

ReplicaCounters ModelCounters::totals() const {
  ReplicaCounters sum = removed_;
  for (const auto& c : replicas_) {
    sum.in_flight += c.in_flight;
    add_routed(sum, c);
  }
  return sum;
}

std::optional<double> ModelCounters::sticky_percent() const {
  const ReplicaCounters sum = totals();
  const std::uint64_t denominator = sum.sticky + sum.spilled_in;
  if (denominator == 0) {
    return std::nullopt;
  }
  return 100.0 * static_cast<double>(sum.sticky) / static_cast<double>(denominator);
}

}  // namespace warden::core
