// Test helper: the command line that starts `lm-warden sim` for the sim's integration tests, serving
// kModel on a free port (read with ChildProcess::wait_for_port()).
#pragma once

#include <string>
#include <vector>

namespace sim_test {

inline constexpr const char* kModel = "test-model";

// `lm-warden sim` quiet, seeded, on --port 0, then `extra` (preset, sizes, flags under test).
inline std::vector<std::string> sim_args(const std::vector<std::string>& extra) {
  std::vector<std::string> a{WARDEN_BINARY, "sim",    "--port", "0",           "--served-model-name",
                             kModel,        "--seed", "7",      "--log-level", "warn"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace sim_test
