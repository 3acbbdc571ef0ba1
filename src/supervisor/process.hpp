// Starting an engine process: fork/exec into its own process group, stdout/stderr on pipes, stdin from
// /dev/null, every other descriptor closed, PR_SET_PDEATHSIG(SIGKILL) so it dies with the warden.
//
// PR_SET_PDEATHSIG fires when the *thread* that forked exits, not the process: spawn from a thread that
// lives as long as the process (LM Warden forks from the main thread, which runs the io_context).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "supervisor/launch.hpp"

namespace warden::supervisor {

struct Spawned {
  pid_t pid = -1;  // also the process group id
  int stdout_fd = -1;
  int stderr_fd = -1;
};

struct SpawnResult {
  std::optional<Spawned> process;
  std::string error;  // "cannot execute 'vllm': No such file or directory"
};

// `cmd.env` is layered over the warden's environment. argv[0] without '/' is looked up in PATH (the one
// `cmd.env` sets, else the warden's). Exec failures are reported here, not as an exit status.
SpawnResult spawn_process(const CommandLine& cmd);

// argv[0] → the file to execute (PATH lookup when it has no '/'); std::nullopt if not found/executable.
std::optional<std::string> resolve_executable(const std::string& name, const std::string& path_env);

// "exited with status 3", "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

}  // namespace warden::supervisor
