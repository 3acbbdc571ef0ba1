#include "core/policy.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "base/splitmix.hpp"
#include "core/decide.hpp"
#include "core/pick.hpp"

namespace warden::core {

namespace {

Decision no_replica(const Snapshot& snapshot, Route route) {
  return Decision{
      std::nullopt, route,
      snapshot.replicas.empty() ? NoReplicaReason::no_replicas : NoReplicaReason::no_healthy_replica};
}

// How a hashing policy's pick relates to the conversation's recorded home.
Route classify(const Snapshot& snapshot, const RequestFacts& facts, ReplicaIndex chosen) {
  if (!facts.home) {
    return Route::new_conversation;
  }
  if (*facts.home == chosen) {
    return Route::sticky;
  }
  if (*facts.home >= snapshot.replicas.size() || !snapshot.replicas[*facts.home].healthy) {
    return Route::failover;
  }
  return Route::spilled;
}

// A uniformly random healthy replica (for requests without a session key under the hashing policies).
std::optional<ReplicaIndex> random_healthy(const Snapshot& snapshot, Rng& rng) {
  const auto healthy = [&](ReplicaIndex i) { return snapshot.replicas[i].healthy; };
  return detail::pick_min(
      snapshot, healthy, [](const ReplicaState&) { return 0.0; }, rng);
}

class AffinityPolicy final : public Policy {
 public:
  std::string_view name() const override { return "affinity"; }
  Decision pick(const Snapshot& snapshot, const RequestFacts& facts, Rng& rng) override {
    return decide(snapshot, facts, rng);
  }
};

class VllmLbPolicy final : public Policy {
 public:
  std::string_view name() const override { return "vllm-lb"; }
  Decision pick(const Snapshot& snapshot, const RequestFacts& facts, Rng& rng) override {
    return decide_balanced(snapshot, facts, rng);
  }
};

class RoundRobinPolicy final : public Policy {
 public:
  std::string_view name() const override { return "round-robin"; }
  Decision pick(const Snapshot& snapshot, const RequestFacts& facts, Rng&) override {
    if (auto pinned = decide_pin(snapshot, facts)) {
      return *pinned;
    }
    const std::size_t count = snapshot.replicas.size();
    for (std::size_t step = 0; step < count; ++step) {
      const auto candidate = static_cast<ReplicaIndex>((next_ + step) % count);
      if (snapshot.replicas[candidate].healthy) {
        next_ = (static_cast<std::size_t>(candidate) + 1) % count;
        return Decision{candidate, Route::balanced, NoReplicaReason::none};
      }
    }
    return no_replica(snapshot, Route::balanced);
  }

 private:
  std::size_t next_ = 0;
};

class SessionHashPolicy final : public Policy {
 public:
  std::string_view name() const override { return "session-hash"; }
  Decision pick(const Snapshot& snapshot, const RequestFacts& facts, Rng& rng) override {
    if (auto pinned = decide_pin(snapshot, facts)) {
      return *pinned;
    }
    const std::size_t count = snapshot.replicas.size();
    if (count == 0 || healthy_count(snapshot) == 0) {
      return no_replica(snapshot, facts.home ? Route::failover : Route::new_conversation);
    }
    if (!facts.session) {
      return Decision{random_healthy(snapshot, rng), Route::new_conversation, NoReplicaReason::none};
    }
    const std::size_t start = base::mix64(facts.session->hash) % count;
    for (std::size_t step = 0; step < count; ++step) {
      const auto candidate = static_cast<ReplicaIndex>((start + step) % count);
      if (snapshot.replicas[candidate].healthy) {
        return Decision{candidate, classify(snapshot, facts, candidate), NoReplicaReason::none};
      }
    }
    return no_replica(snapshot, Route::new_conversation);  // unreachable: one replica is healthy
  }
};

class ChwblPolicy final : public Policy {
 public:
  std::string_view name() const override { return "chwbl"; }
  Decision pick(const Snapshot& snapshot, const RequestFacts& facts, Rng& rng) override {
    if (auto pinned = decide_pin(snapshot, facts)) {
      return *pinned;
    }
    const std::size_t count = snapshot.replicas.size();
    std::uint64_t total = 0;
    std::size_t healthy = 0;
    for (const auto& replica : snapshot.replicas) {
      if (replica.healthy) {
        total += replica.in_flight;
        ++healthy;
      }
    }
    if (healthy == 0) {
      return no_replica(snapshot, facts.home ? Route::failover : Route::new_conversation);
    }
    build_ring(count);
    // Mirrokni et al.: with m requests (counting this one) over n bins, a bin accepts while its load
    // after the placement stays within ceil(c * m / n).
    const auto capacity = static_cast<std::uint64_t>(
        std::ceil(chwbl_balance_factor * static_cast<double>(total + 1) / static_cast<double>(healthy)));
    const std::uint64_t point = base::mix64(facts.session ? facts.session->hash : rng.uniform(~0ULL));
    auto it = std::lower_bound(ring_.begin(), ring_.end(), point,
                               [](const RingPoint& p, std::uint64_t value) { return p.hash < value; });
    std::fill(visited_.begin(), visited_.end(), false);
    std::size_t seen = 0;
    for (std::size_t step = 0; step < ring_.size() && seen < count; ++step, ++it) {
      if (it == ring_.end()) {
        it = ring_.begin();
      }
      const ReplicaIndex candidate = it->replica;
      if (visited_[candidate]) {
        continue;
      }
      visited_[candidate] = true;
      ++seen;
      const auto& state = snapshot.replicas[candidate];
      if (state.healthy && state.in_flight + 1ULL <= capacity) {
        return Decision{candidate, classify(snapshot, facts, candidate), NoReplicaReason::none};
      }
    }
    // Unreachable in theory (the least-loaded healthy replica is always under the bound); stay safe.
    const auto fallback = random_healthy(snapshot, rng);
    return Decision{fallback, classify(snapshot, facts, *fallback), NoReplicaReason::none};
  }

 private:
  struct RingPoint {
    std::uint64_t hash;
    ReplicaIndex replica;
  };

  void build_ring(std::size_t count) {
    if (ring_replicas_ == count) {
      return;
    }
    ring_.clear();
    ring_.reserve(count * chwbl_virtual_nodes);
    for (std::size_t r = 0; r < count; ++r) {
      for (std::uint32_t v = 0; v < chwbl_virtual_nodes; ++v) {
        ring_.push_back(
            RingPoint{base::mix64((static_cast<std::uint64_t>(r) << 32) ^ v ^ 0xC0FFEE0000000000ULL),
                      static_cast<ReplicaIndex>(r)});
      }
    }
    std::sort(ring_.begin(), ring_.end(), [](const RingPoint& a, const RingPoint& b) {
      return a.hash != b.hash ? a.hash < b.hash : a.replica < b.replica;
    });
    visited_.assign(count, false);
    ring_replicas_ = count;
  }

  std::vector<RingPoint> ring_;
  std::vector<bool> visited_;
  std::size_t ring_replicas_ = 0;
};

constexpr std::array<std::string_view, 5> names = {"affinity", "vllm-lb", "round-robin", "session-hash",
                                                   "chwbl"};

}  // namespace

std::span<const std::string_view> policy_names() {
  return names;
}

std::unique_ptr<Policy> make_policy(std::string_view name) {
  if (name == "affinity") {
    return std::make_unique<AffinityPolicy>();
  }
  if (name == "vllm-lb") {
    return std::make_unique<VllmLbPolicy>();
  }
  if (name == "round-robin") {
    return std::make_unique<RoundRobinPolicy>();
  }
  if (name == "session-hash") {
    return std::make_unique<SessionHashPolicy>();
  }
  if (name == "chwbl") {
    return std::make_unique<ChwblPolicy>();
  }
  return nullptr;
}

}  // namespace warden::core
