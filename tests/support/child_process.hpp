#pragma once
// A child process for integration tests: fork/exec with args and env, stdout/stderr captured to files,
// wait for the "listening on http://HOST:PORT" line with a bounded timeout, and a destructor that
// sends SIGTERM, waits a grace period, then SIGKILLs and reaps. The child gets PR_SET_PDEATHSIG so it
// dies with the test even if the test crashes.
//
//   test_support::ChildProcess sim({WARDEN_BINARY, "sim", "--port", "0", "--preset", "instant"});
//   int port = sim.wait_for_port();            // throws std::runtime_error after the timeout
//   ...
//   int code = sim.stop();                     // SIGTERM, wait; exit code (or 128+signal)
//
// Header-only so any layer's tests can `#include "support/child_process.hpp"`.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace test_support {

class ChildProcess {
 public:
  using Env = std::vector<std::pair<std::string, std::string>>;

  /// Starts argv[0] with argv (PATH is not searched: give a path). `env` entries are added to (or
  /// override) the test's own environment.
  explicit ChildProcess(std::vector<std::string> argv, Env env = {}) : argv_(std::move(argv)) {
    if (argv_.empty()) {
      throw std::invalid_argument("ChildProcess: empty argv");
    }
    static std::atomic<int> counter{0};
    std::string base = "/tmp/warden-child-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    out_path_ = base + ".out";
    err_path_ = base + ".err";
    int out_fd = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int err_fd = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out_fd < 0 || err_fd < 0) {
      throw std::runtime_error("ChildProcess: cannot create capture files");
    }
    // Build everything before fork: only async-signal-safe calls are allowed in the child.
    std::vector<char*> args;
    for (auto& a : argv_) {
      args.push_back(a.data());
    }
    args.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string s = *e;
      bool overridden = false;
      for (const auto& [k, v] : env) {
        if (s.compare(0, k.size() + 1, k + "=") == 0) {
          overridden = true;
        }
      }
      if (!overridden) {
        env_strings.push_back(std::move(s));
      }
    }
    for (const auto& [k, v] : env) {
      env_strings.push_back(k + "=" + v);
    }
    std::vector<char*> envp;
    for (auto& e : env_strings) {
      envp.push_back(e.data());
    }
    envp.push_back(nullptr);
    pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) {
      throw std::runtime_error("ChildProcess: fork failed");
    }
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) {
        ::_exit(127);  // the parent died before prctl took effect
      }
      ::dup2(out_fd, STDOUT_FILENO);
      ::dup2(err_fd, STDERR_FILENO);
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) {
        ::dup2(devnull, STDIN_FILENO);
      }
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
    ::close(out_fd);
    ::close(err_fd);
  }

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  ~ChildProcess() {
    stop();
    if (!keep_files_) {
      ::unlink(out_path_.c_str());
      ::unlink(err_path_.c_str());
    }
  }

  pid_t pid() const noexcept { return pid_; }

  /// Waits until stdout holds "listening on http://HOST:PORT" and returns PORT. Throws (with the
  /// captured stderr) if the child exits first or the timeout passes.
  int wait_for_port(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    static const std::regex re(R"(listening on https?://[^\s:]+:(\d+))");
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      std::smatch m;
      std::string out = stdout_text();
      if (std::regex_search(out, m, re)) {
        port_ = std::stoi(m[1].str());
        return port_;
      }
      if (!running()) {
        throw std::runtime_error("child exited before listening; stderr:\n" + stderr_text());
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("child did not print its listening line in time; stderr:\n" + stderr_text());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling a file, bounded by deadline
    }
  }

  int port() const noexcept { return port_; }

  /// True while the child has not exited (reaps it if it has).
  bool running() {
    if (exited_) {
      return false;
    }
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      record(status);
      return false;
    }
    return true;
  }

  /// Waits up to `timeout` for the child to exit by itself; returns its exit code if it did.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return exit_code_;
  }

  /// Sends `sig` (no effect once exited).
  void signal(int sig) {
    if (!exited_ && pid_ > 0) {
      ::kill(pid_, sig);
    }
  }

  /// SIGTERM, wait up to `grace`, then SIGKILL; reaps. Returns the exit code (128+signal if killed by a
  /// signal). Idempotent.
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(5)) {
    if (pid_ <= 0) {
      return -1;
    }
    if (!exited_) {
      ::kill(pid_, SIGTERM);
      if (!wait_exit(grace)) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        record(status);
      }
    }
    return exit_code_;
  }

  std::string stdout_text() const { return slurp(out_path_); }
  std::string stderr_text() const { return slurp(err_path_); }
  /// Keep the capture files after destruction (for debugging a failing test).
  void keep_files() { keep_files_ = true; }

 private:
  void record(int status) {
    exited_ = true;
    if (WIFEXITED(status)) {
      exit_code_ = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      exit_code_ = 128 + WTERMSIG(status);
    }
  }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::vector<std::string> argv_;
  std::string out_path_;
  std::string err_path_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool exited_ = false;
  int exit_code_ = -1;
  bool keep_files_ = false;
};

}  // namespace test_support
