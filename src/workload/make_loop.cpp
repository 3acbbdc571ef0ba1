#include "workload/make_loop.hpp"

#include "workload/agent_loop.hpp"
#include "workload/closed_loop.hpp"

namespace warden::workload {

std::unique_ptr<Loop> make_loop(const Workload& workload, std::size_t sessions, double now,
                                std::uint64_t first_session_index) {
  if (workload.agentic()) {
    return std::make_unique<AgentLoop>(workload, sessions, now, first_session_index);
  }
  return std::make_unique<ClosedLoop>(workload, sessions, now, first_session_index);
}

}  // namespace warden::workload
