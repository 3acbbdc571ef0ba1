// The closed loop of a workload's kind, for the drivers (bench, simulate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "workload/loop.hpp"
#include "workload/workload.hpp"

namespace warden::workload {

// AgentLoop for the agentic workload, ClosedLoop otherwise. `workload` must outlive it.
std::unique_ptr<Loop> make_loop(const Workload& workload, std::size_t sessions, double now,
                                std::uint64_t first_session_index);

}  // namespace warden::workload
