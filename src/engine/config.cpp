#include "engine/config.hpp"

#include <string>

namespace warden::engine {

std::string_view scheduling_policy_name(SchedulingPolicy policy) {
  return policy == SchedulingPolicy::priority ? "priority" : "fcfs";
}

std::optional<SchedulingPolicy> parse_scheduling_policy(std::string_view name) {
  if (name == "fcfs") {
    return SchedulingPolicy::fcfs;
  }
  if (name == "priority") {
    return SchedulingPolicy::priority;
  }
  return std::nullopt;
}

}  // namespace warden::engine
