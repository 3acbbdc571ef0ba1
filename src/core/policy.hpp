#pragma once
// Routing policies by name: the warden's own rule plus the baselines it is compared against. Each policy is
// a small class over the snapshot with randomness injected (Envoy style). Every policy honours client pins
// (decide_pin) and never picks an unhealthy replica otherwise.

#include <memory>
#include <span>
#include <string_view>

#include "core/rng.hpp"
#include "core/types.hpp"

namespace warden::core {

/// A routing policy. Some hold state (round-robin's position, chwbl's ring): one instance per
/// Router.
class Policy {
 public:
  virtual ~Policy() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// Chooses a replica. Route semantics for the hashing policies: `new` when facts.home is empty,
  /// `sticky` when the pick is the home, `failover` when the home is unhealthy or out of range, `spilled`
  /// when load pushed the request off its healthy home (chwbl). Load-only policies answer `balanced`.
  [[nodiscard]] virtual Decision pick(const Snapshot& snapshot, const RequestFacts& facts, Rng& rng) = 0;
};

/// Names in the registry:
///  - `affinity`     the warden's rule, decide() (honours snapshot.routing.affinity);
///  - `vllm-lb`      decide() with affinity off: lowest vllm_lb_score (snapshot.routing.vllm_balancer), RNG
///  ties;
///  - `round-robin`  next healthy replica in turn, load-blind;
///  - `session-hash` session hash mod N, skipping forward over unhealthy replicas, load-blind (requests
///                   without a session key are placed at random among healthy replicas);
///  - `chwbl`        consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2017): a ring
///                   of 160 virtual nodes per replica; walk clockwise from the session hash to the first
///                   healthy replica with in_flight + 1 <= ceil(1.25 * (total_in_flight + 1) / healthy).
[[nodiscard]] std::span<const std::string_view> policy_names();

/// A new policy instance, or nullptr for an unknown name.
[[nodiscard]] std::unique_ptr<Policy> make_policy(std::string_view name);

/// chwbl's load bound factor.
inline constexpr double chwbl_balance_factor = 1.25;
/// chwbl's virtual nodes per replica.
inline constexpr std::uint32_t chwbl_virtual_nodes = 160;

}  // namespace warden::core
