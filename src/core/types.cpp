#include "core/types.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace warden::core {

std::optional<SpillThreshold> SpillThreshold::parse(std::string_view text) {
  if (text == "auto") {
    return SpillThreshold{};
  }
  std::uint32_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end || value == 0 || value > max_fixed) {
    return std::nullopt;
  }
  return SpillThreshold{value};
}

std::string SpillThreshold::to_string() const {
  return fixed ? std::to_string(*fixed) : "auto";
}

std::string SpillThreshold::label(std::uint32_t max_num_seqs) const {
  auto text = std::to_string(resolve(max_num_seqs));
  return is_auto() ? text + " (auto)" : text;
}

std::string_view vllm_balancer_model_name(VllmBalancerModel model) {
  return model == VllmBalancerModel::legacy ? "legacy" : "current";
}

std::optional<VllmBalancerModel> parse_vllm_balancer_model(std::string_view name) {
  if (name == "current") {
    return VllmBalancerModel::current;
  }
  if (name == "legacy") {
    return VllmBalancerModel::legacy;
  }
  return std::nullopt;
}

std::string_view task_packing_name(TaskPacking packing) {
  switch (packing) {
    case TaskPacking::growth:
      return "growth";
    case TaskPacking::remaining:
      return "remaining";
    case TaskPacking::shared:
      return "shared";
    case TaskPacking::mean:
      break;
  }
  return "mean";
}

std::optional<TaskPacking> parse_task_packing(std::string_view name) {
  for (const TaskPacking p :
       {TaskPacking::mean, TaskPacking::growth, TaskPacking::remaining, TaskPacking::shared}) {
    if (name == task_packing_name(p)) {
      return p;
    }
  }
  return std::nullopt;
}

namespace {
constexpr std::array<std::string_view, route_count> route_names = {
    "new", "sticky", "spilled", "pinned", "balanced", "failover", "queued", "rehomed"};
}  // namespace

std::string_view route_name(Route route) {
  const auto index = static_cast<std::size_t>(route);
  return index < route_names.size() ? route_names[index] : "unknown";
}

std::string_view work_class_name(WorkClass work_class) {
  return work_class == WorkClass::interactive ? "interactive" : "headless";
}

std::optional<Route> parse_route(std::string_view name) {
  for (std::size_t i = 0; i < route_names.size(); ++i) {
    if (route_names[i] == name) {
      return static_cast<Route>(i);
    }
  }
  return std::nullopt;
}

std::string_view no_replica_reason_name(NoReplicaReason reason) {
  switch (reason) {
    case NoReplicaReason::none:
      return "none";
    case NoReplicaReason::no_replicas:
      return "no replicas configured";
    case NoReplicaReason::no_healthy_replica:
      return "no healthy replica";
    case NoReplicaReason::pin_out_of_range:
      return "pinned replica out of range";
  }
  return "unknown";
}

}  // namespace warden::core
