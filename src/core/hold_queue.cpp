#include "core/hold_queue.hpp"

namespace warden::core {

HoldRules hold_rules(const RoutingConfig& routing) {
  return {.max_queue = routing.admission.max_queue,
          .longest = longest_hold(routing),
          .admission_wait = routing.admission.max_wait,
          .every_request = routing.admission.enabled && routing.admission.hold_task_starts};
}

}  // namespace warden::core
