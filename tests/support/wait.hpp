#pragma once
// The one polling helper of the tests: wait for a condition another thread or process makes true, bounded
// by a timeout (never sleep as synchronisation). Header-only so any layer's tests can
// `#include "support/wait.hpp"`.

#include <chrono>
#include <functional>
#include <thread>

namespace test_support {

/// Polls `pred` every few milliseconds until it holds (true) or `timeout` has passed (then `pred` once
/// more: the condition may have come true during the last pause).
inline bool wait_until(const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return pred();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace test_support
