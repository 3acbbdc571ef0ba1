#pragma once
// Helpers for the supervisor's process tests: free loopback ports, liveness of a pid (zombies count as
// dead: a reparented grandchild may stay a zombie if nobody reaps it), and the shared polling helper.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/http.hpp"
#include "support/wait.hpp"

namespace supervisor_test {

using test_support::free_port;  // the engines need fixed ports up front
using test_support::wait_until;

// True if `pid` exists and is not a zombie.
inline bool process_alive(int pid) {
  if (pid <= 0) {
    return false;
  }
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) {
    return false;
  }
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  if (close == std::string::npos || close + 2 >= s.size()) {
    return false;
  }
  const char state = s[close + 2];
  return state != 'Z' && state != 'X';
}

// True if any process of group `pgid` is alive (not a zombie): /proc/PID/stat's 5th field is the group.
inline bool group_alive(int pgid) {
  if (pgid <= 0) {
    return false;
  }
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::ifstream in(e.path() / "stat");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = s.rfind(')');
    if (close == std::string::npos || close + 2 >= s.size()) {
      continue;  // gone meanwhile
    }
    std::istringstream rest(s.substr(close + 2));
    char state = 0;
    int ppid = 0;
    int group = 0;
    rest >> state >> ppid >> group;
    if (rest && group == pgid && state != 'Z' && state != 'X') {
      return true;
    }
  }
  return false;
}

// The golden `vllm serve` arguments (after the program) for the DP4 reference model listening on `port`.
inline std::vector<std::string> golden_dp4_vllm_args(const std::string& port) {
  return {"serve",
          "Qwen/Qwen3-4B-Instruct-2507",
          "--served-model-name",
          "Qwen/Qwen3-4B-Instruct-2507",
          "--host",
          "127.0.0.1",
          "--port",
          port,
          "--data-parallel-size",
          "4",
          "--tensor-parallel-size",
          "1",
          "--max-num-seqs",
          "32",
          "--enable-prompt-tokens-details"};
}

}  // namespace supervisor_test
