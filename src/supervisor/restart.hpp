// The restart decision after an engine exits: a pure function of the run's outcome and the failures so
// far (no clocks: durations are parameters), so the backoff and give-up rules are unit-tested exactly.
#pragma once

#include <chrono>

#include "supervisor/launch.hpp"

namespace warden::supervisor {

struct RunOutcome {
  bool reached_ready = false;              // /health answered 200 during this run
  std::chrono::milliseconds ready_for{0};  // how long it stayed ready before exiting
};

struct RestartDecision {
  bool give_up = false;  // → status `failed`
  std::chrono::milliseconds delay{0};
};

class RestartTracker {
 public:
  explicit RestartTracker(RestartPolicy policy = {}) : policy_(policy) {}

  // Exponential backoff: initial * 2^(failures-1) up to max. A run that stayed ready for
  // `stable_after` resets the count first; `max_start_failures` runs in a row that never became ready
  // give up (a command that fails at once must not be restarted forever).
  RestartDecision after_exit(const RunOutcome& run);
  int consecutive_failures() const { return failures_; }
  int consecutive_start_failures() const { return start_failures_; }
  void reset() { failures_ = start_failures_ = 0; }

 private:
  RestartPolicy policy_;
  int failures_ = 0;
  int start_failures_ = 0;
};

}  // namespace warden::supervisor
