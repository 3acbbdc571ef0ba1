#include "core/hold_queue.hpp"

#include <algorithm>

namespace warden::core {

HoldRules hold_rules(const RoutingConfig& routing) {
  return {.max_queue = routing.admission.max_queue,
          .longest = longest_hold(routing, false),
          .kept_alive_longest = longest_hold(routing, true),
          .admission_wait = routing.admission.max_wait,
          .every_request = routing.admission.enabled && routing.admission.hold_task_starts,
          .tenant_queue = tenant_queue(routing.admission)};
}

std::size_t tenant_queue(const AdmissionConfig& admission) {
  return admission.tenant_queue ? *admission.tenant_queue : std::max<std::size_t>(1, admission.max_queue / 2);
}

}  // namespace warden::core
