#include "supervisor/restart.hpp"

#include <algorithm>

namespace warden::supervisor {

RestartDecision RestartTracker::after_exit(const RunOutcome& run) {
  if (run.reached_ready && run.ready_for >= policy_.stable_after) {
    failures_ = 0;
  }
  start_failures_ = run.reached_ready ? 0 : start_failures_ + 1;
  ++failures_;
  RestartDecision d;
  if (start_failures_ >= policy_.max_start_failures) {
    d.give_up = true;
    return d;
  }
  auto delay = policy_.initial_backoff;
  for (int i = 1; i < failures_ && delay < policy_.max_backoff; ++i) {
    delay *= 2;
  }
  d.delay = std::min(delay, policy_.max_backoff);
  return d;
}

}  // namespace warden::supervisor
