// simulate's policy table: every row runs a policy of core's registry, and its settings reach the Router.
#include "whatif/policies.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/policy.hpp"
#include "whatif/driver.hpp"

namespace warden::whatif {
namespace {

TEST(SimulatePolicies, EachRowRunsACorePolicyUnderItsOwnName) {
  const auto core_names = core::policy_names();
  std::set<std::string_view> seen;
  for (const SimulatePolicy& p : simulate_policies()) {
    EXPECT_TRUE(seen.insert(p.name).second) << p.name;
    EXPECT_NE(std::find(core_names.begin(), core_names.end(), p.core), core_names.end()) << p.name;
    EXPECT_EQ(find_policy(p.name), &p);
  }
  // Every policy of core's registry but vllm-lb (the balancer model's name) runs under its own name.
  for (const std::string_view n : core_names) {
    const SimulatePolicy* p = find_policy(n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_EQ(p->core == n, n != "vllm-lb" || p->settings.vllm_model) << n;
  }
  EXPECT_EQ(find_policy("nonesuch"), nullptr);
  EXPECT_EQ(simulate_policy_names().size(), simulate_policies().size());
}

TEST(SimulatePolicies, RowsSetTheRoutersRouting) {
  SimulationConfig c;
  c.routing.task_admission.enabled = true;
  c.engine.max_num_seqs = 7;
  const core::RoutingConfig affinity = policy_routing(*find_policy("affinity"), c);
  EXPECT_TRUE(affinity.affinity);
  EXPECT_EQ(affinity.policy, "affinity");
  EXPECT_EQ(affinity.max_num_seqs, 7U);
  EXPECT_TRUE(affinity.task_admission.enabled);
  EXPECT_FALSE(affinity.admission.enabled);

  const core::RoutingConfig admission = policy_routing(*find_policy("admission"), c);
  EXPECT_TRUE(admission.affinity);
  EXPECT_TRUE(admission.admission.enabled);
  EXPECT_FALSE(admission.admission.hold_task_starts);
  EXPECT_FALSE(admission.task_admission.enabled);  // each admission rule measured alone
  EXPECT_TRUE(policy_routing(*find_policy("tasks"), c).admission.hold_task_starts);

  const core::RoutingConfig warden_lb = policy_routing(*find_policy("warden-lb"), c);
  EXPECT_FALSE(warden_lb.affinity);
  EXPECT_EQ(warden_lb.policy, "vllm-lb");

  c.admission_gap_factor = 5;
  EXPECT_EQ(policy_sessions(*find_policy("admission"), c).adaptive_gap_factor, 5);
  EXPECT_EQ(policy_sessions(*find_policy("affinity"), c).adaptive_gap_factor, c.sessions.adaptive_gap_factor);
}

}  // namespace
}  // namespace warden::whatif
