#include "supervisor/process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

extern char** environ;

namespace warden::supervisor {

namespace {

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) {
      ::close(fd);
    }
    fd = -1;
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

bool make_pipe(Fd& r, Fd& w) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    return false;
  }
  r.fd = p[0];
  w.fd = p[1];
  return true;
}

// Child side, between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(pid_t parent, int out_fd, int err_fd, int report_fd, const char* file,
                             char* const* argv, char* const* envp) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) {
    ::_exit(127);  // the warden died before PDEATHSIG was armed
  }
  // Dispositions set to "ignore" survive exec; the engine should start with defaults.
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGQUIT}) {
    ::sigaction(sig, &sa, nullptr);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0 && devnull != STDIN_FILENO) {
    ::dup2(devnull, STDIN_FILENO);
  }
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  // Keep the report pipe (close-on-exec) but nothing else the warden had open: listening sockets,
  // connections and the other engines' pipes must not leak into an engine.
  const int keep = report_fd;
  if (keep > 3) {
    ::syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u);
  }
  if (::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u) != 0) {
    struct rlimit rl {};
    int max =
        ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? static_cast<int>(rl.rlim_cur) : 65536;
    for (int fd = 3; fd < max; ++fd) {
      if (fd != keep) {
        ::close(fd);
      }
    }
  }
  ::execve(file, argv, envp);
  int err = errno;
  [[maybe_unused]] auto n = ::write(report_fd, &err, sizeof err);
  ::_exit(127);
}

}  // namespace

std::optional<std::string> resolve_executable(const std::string& name, const std::string& path_env) {
  if (name.empty()) {
    return std::nullopt;
  }
  if (name.find('/') != std::string::npos) {
    return name;  // execve reports what is wrong with it
  }
  std::string_view path = path_env.empty() ? std::string_view("/usr/local/bin:/usr/bin:/bin") : path_env;
  while (true) {
    auto colon = path.find(':');
    std::string dir(path.substr(0, colon));
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) {
      return std::nullopt;
    }
    path.remove_prefix(colon + 1);
  }
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) {
    return fmt::format("exited with status {}", WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    const char* name = ::strsignal(WTERMSIG(status));
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), name ? name : "?");
  }
  return fmt::format("ended with wait status {}", status);
}

SpawnResult spawn_process(const CommandLine& cmd) {
  SpawnResult result;
  if (cmd.argv.empty()) {
    result.error = "empty command";
    return result;
  }
  // Everything the child needs is built before fork.
  std::vector<std::string> env_strings;
  std::string path_env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view s = *e;
    bool replaced = false;
    for (const auto& [k, v] : cmd.env) {
      replaced = replaced || (s.size() > k.size() && s.compare(0, k.size(), k) == 0 && s[k.size()] == '=');
    }
    if (!replaced) {
      env_strings.emplace_back(s);
      if (s.starts_with("PATH=")) {
        path_env = std::string(s.substr(5));
      }
    }
  }
  for (const auto& [k, v] : cmd.env) {
    env_strings.push_back(k + "=" + v);
    if (k == "PATH") {
      path_env = v;
    }
  }
  auto file = resolve_executable(cmd.argv.front(), path_env);
  if (!file) {
    result.error = fmt::format("cannot execute '{}': not found in PATH", cmd.argv.front());
    return result;
  }
  std::vector<std::string> args = cmd.argv;
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env_strings) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);

  Fd out_r, out_w, err_r, err_w, rep_r, rep_w;
  if (!make_pipe(out_r, out_w) || !make_pipe(err_r, err_w) || !make_pipe(rep_r, rep_w)) {
    result.error = fmt::format("cannot create pipes: {}", std::strerror(errno));
    return result;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.error = fmt::format("fork failed: {}", std::strerror(errno));
    return result;
  }
  if (pid == 0) {
    exec_child(parent, out_w.fd, err_w.fd, rep_w.fd, file->c_str(), argv.data(), envp.data());
  }
  ::setpgid(pid, pid);  // also done in the child: whichever runs first wins, no race with kill(-pid)
  out_w.reset();
  err_w.reset();
  rep_w.reset();
  // EOF = exec succeeded (the close-on-exec report pipe closed); an int = exec's errno.
  int err = 0;
  ssize_t n = 0;
  do {
    n = ::read(rep_r.fd, &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof err)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.error = fmt::format("cannot execute '{}': {}", *file, std::strerror(err));
    return result;
  }
  result.process = Spawned{pid, out_r.release(), err_r.release()};
  return result;
}

}  // namespace warden::supervisor
