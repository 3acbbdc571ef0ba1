#include "supervisor/supervisor.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

#include "supervisor/process.hpp"

namespace warden::supervisor {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string seconds_text(Clock::duration d) {
  if (d < 1s) {
    return fmt::format("{} ms", std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  }
  return fmt::format("{:.1f} s", std::chrono::duration<double>(d).count());
}

// How long to wait for the pipes to drain after an exit, so the last lines are in the log before the
// status changes (a grandchild that escaped the process group could hold them open forever).
constexpr auto kDrainWait = 500ms;
constexpr auto kProgressEvery = 10s;

}  // namespace

std::string_view to_string(EngineState s) {
  switch (s) {
    case EngineState::starting:
      return "starting";
    case EngineState::ready:
      return "ready";
    case EngineState::restarting:
      return "restarting";
    case EngineState::failed:
      return "failed";
    case EngineState::stopping:
      return "stopping";
    case EngineState::stopped:
      return "stopped";
  }
  return "starting";
}

EngineState worst_state(const std::vector<EngineState>& states) {
  constexpr std::array order = {EngineState::failed,   EngineState::restarting, EngineState::starting,
                                EngineState::stopping, EngineState::stopped,    EngineState::ready};
  for (auto s : order) {
    for (auto x : states) {
      if (x == s) {
        return s;
      }
    }
  }
  return EngineState::ready;
}

EngineSpec engine_spec(const LaunchSpec& launch, const EngineTarget& target) {
  EngineSpec s;
  s.name = target.name();
  s.command = build_command(launch, target);
  // The health check goes where the gateway will send traffic (the replica URL), not to --host.
  s.health_host = target.host;
  s.health_port = target.port;
  s.health_target = target.base_path + launch.health_path;
  s.health_timeout = launch.health_timeout;
  s.stop_grace = launch.stop_grace;
  s.restart = launch.restart;
  s.log_lines = launch.log_lines;
  return s;
}

struct Supervisor::Engine {
  Engine(EngineId i, EngineSpec s, const asio::any_io_executor& ex)
      : id(i),
        spec(std::move(s)),
        tracker(spec.restart),
        ring(spec.log_lines),
        backoff(ex),
        grace(ex),
        drain(ex),
        command(spec.command.display()) {
    ring.redact(spec.command.secrets());
  }

  EngineId id;
  EngineSpec spec;
  RestartTracker tracker;
  LogRing ring;
  asio::steady_timer backoff;
  asio::steady_timer grace;
  asio::steady_timer drain;
  std::string command;

  EngineState state = EngineState::starting;
  std::string reason = "not started";
  std::int64_t since_ms = unix_ms();
  std::string last_exit;
  int restarts = 0;
  bool ever_started = false;

  // The current run (generation `gen`): coroutines of an older run see a different gen and stop.
  std::uint64_t gen = 0;
  pid_t pid = -1;
  Clock::time_point started_at{};
  std::optional<Clock::time_point> ready_at;
  std::string kill_reason;         // set when the warden killed it (health timeout)
  int open_streams = 0;            // output pipes not yet at EOF
  std::optional<int> exit_status;  // reaped, waiting for the pipes to drain
};

Supervisor::Supervisor(asio::any_io_executor ex)
    : ex_(ex), sigchld_(ex), pool_(ex), alive_(std::make_shared<bool>(true)) {}

Supervisor::~Supervisor() {
  *alive_ = false;
  for (auto& e : engines_) {
    e->backoff.cancel();
    e->grace.cancel();
    e->drain.cancel();
    if (e->pid > 0) {
      ::kill(-e->pid, SIGKILL);
      int status = 0;
      while (::waitpid(e->pid, &status, 0) < 0 && errno == EINTR) {
      }
      e->pid = -1;
    }
  }
  boost::system::error_code ignored;
  sigchld_.cancel(ignored);
  sigchld_.clear(ignored);
}

Supervisor::EngineId Supervisor::add(EngineSpec spec) {
  const EngineId id = engines_.size();
  engines_.push_back(std::make_shared<Engine>(id, std::move(spec), ex_));
  return id;
}

const EngineSpec& Supervisor::spec(EngineId id) const {
  return engines_.at(id)->spec;
}

EngineStatus Supervisor::status(EngineId id) const {
  const Engine& e = *engines_.at(id);
  EngineStatus s;
  s.state = e.state;
  s.reason = e.reason;
  s.pid = e.pid > 0 ? e.pid : 0;
  s.restarts = e.restarts;
  s.since_unix_ms = e.since_ms;
  s.command = e.command;
  s.last_exit = e.last_exit;
  return s;
}

std::vector<LogLine> Supervisor::logs(EngineId id, std::size_t n) const {
  return engines_.at(id)->ring.tail(n);
}

void Supervisor::set_state(Engine& e, EngineState s, std::string reason) {
  if (e.state != s) {
    e.since_ms = unix_ms();
  }
  e.state = s;
  e.reason = std::move(reason);
}

void Supervisor::start() {
  if (started_ || stopping_) {
    return;
  }
  started_ = true;
  if (engines_.empty()) {
    return;  // no signal handler, no work: the io_context can finish without us
  }
  sigchld_.add(SIGCHLD);
  arm_sigchld();
  for (auto& e : engines_) {
    spawn(e);
  }
}

void Supervisor::arm_sigchld() {
  if (sigchld_armed_) {
    return;
  }
  sigchld_armed_ = true;
  sigchld_.async_wait([this, alive = alive_](const boost::system::error_code& ec, int) {
    if (!*alive) {
      return;
    }
    sigchld_armed_ = false;
    if (ec) {
      return;
    }
    reap();
    if (!stopped()) {
      arm_sigchld();
    }
  });
}

void Supervisor::reap() {
  for (auto& e : engines_) {
    if (e->pid <= 0) {
      continue;
    }
    int status = 0;
    if (::waitpid(e->pid, &status, WNOHANG) == e->pid) {
      exited(e, status);
    }
  }
}

void Supervisor::spawn(const std::shared_ptr<Engine>& e) {
  ++e->gen;
  const bool again = e->ever_started;
  e->ever_started = true;
  SpawnResult r = spawn_process(e->spec.command);
  if (!r.process) {
    // Retrying cannot help a command that cannot be executed at all.
    e->ring.note(r.error, unix_ms());
    set_state(*e, EngineState::failed, r.error);
    spdlog::error("engine {}: {} (command: {})", e->spec.name, r.error, e->command);
    maybe_finished();
    return;
  }
  const Spawned p = *r.process;
  e->pid = p.pid;
  e->started_at = Clock::now();
  e->ready_at.reset();
  e->kill_reason.clear();
  e->exit_status.reset();
  e->open_streams = 2;
  if (again) {
    ++e->restarts;
  }
  const std::string waiting = fmt::format("pid {}: waiting for GET {} on {}:{}", p.pid, e->spec.health_target,
                                          e->spec.health_host, e->spec.health_port);
  if (again) {
    set_state(*e, EngineState::restarting,
              fmt::format("{}; started again (restart {}), {}", e->last_exit, e->restarts, waiting));
  } else {
    set_state(*e, EngineState::starting, waiting);
  }
  e->ring.note(fmt::format("started pid {}: {}", p.pid, e->command), unix_ms());
  spdlog::info("engine {}: started pid {}: {}", e->spec.name, p.pid, e->command);
  asio::co_spawn(ex_, read_output(e, e->gen, LogStream::out, p.stdout_fd), asio::detached);
  asio::co_spawn(ex_, read_output(e, e->gen, LogStream::err, p.stderr_fd), asio::detached);
  asio::co_spawn(ex_, wait_healthy(e, e->gen), asio::detached);
  // The process may have exited before the signal handler was armed for it: check once now.
  reap();
}

asio::awaitable<void> Supervisor::read_output(std::shared_ptr<Engine> e, std::uint64_t gen, LogStream s,
                                              int fd) {
  auto alive = alive_;
  asio::posix::stream_descriptor d(ex_, fd);
  std::array<char, 8192> buf;
  while (true) {
    auto [ec, n] = co_await d.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (n > 0) {
      const auto before = e->ring.total_lines();
      e->ring.feed(s, std::string_view(buf.data(), n), unix_ms());
      // Engine output in the warden's log too, at debug level (`serve --log-level debug`).
      if (spdlog::should_log(spdlog::level::debug)) {
        for (const auto& l : e->ring.tail(static_cast<std::size_t>(e->ring.total_lines() - before))) {
          spdlog::debug("engine {} | {}", e->spec.name, l.text);
        }
      }
    }
    if (ec || !*alive) {
      break;
    }
  }
  e->ring.flush(s, unix_ms());
  if (*alive && e->gen == gen && --e->open_streams <= 0 && e->exit_status) {
    finish_exit(e);
  }
}

asio::awaitable<void> Supervisor::wait_healthy(std::shared_ptr<Engine> e, std::uint64_t gen) {
  auto alive = alive_;
  asio::steady_timer timer(ex_);
  const auto start = Clock::now();
  const auto deadline = start + e->spec.health_timeout;
  auto next_progress = start + kProgressEvery;
  net::ClientTimeouts t;
  t.connect = t.write = 1s;
  t.first_byte = t.idle = 2s;
  const net::Endpoint ep{e->spec.health_host, e->spec.health_port};
  std::string last_error;
  while (true) {
    if (!*alive || e->gen != gen || e->pid <= 0 || stopping_) {
      co_return;
    }
    bool ok = false;
    try {
      net::Request req{net::http::verb::get, e->spec.health_target, 11};
      auto res = co_await pool_.send(ep, std::move(req), t);
      if (res) {
        ok = res->status() == 200;
        last_error = ok ? "" : fmt::format("HTTP {}", res->status());
        auto body = co_await res->read_all(64u << 10);
        (void)body;
      } else {
        last_error = res.error().message();
      }
    } catch (const std::exception& ex) {
      if (!*alive) {
        co_return;
      }
      last_error = ex.what();
    }
    if (!*alive || e->gen != gen || e->pid <= 0 || stopping_) {
      co_return;
    }
    if (ok) {
      became_ready(e);
      co_return;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      terminate(e, fmt::format("no answer 200 from GET {} within {} (last: {})", e->spec.health_target,
                               seconds_text(e->spec.health_timeout), last_error));
      co_return;
    }
    if (now >= next_progress) {
      next_progress += kProgressEvery;
      auto tail = e->ring.tail(1);
      spdlog::info("engine {}: waiting for GET {} ({} of {}; pid {}; last output: {})", e->spec.name,
                   e->spec.health_target, seconds_text(now - start), seconds_text(e->spec.health_timeout),
                   e->pid, tail.empty() ? std::string("-") : tail.front().text);
    }
    timer.expires_after(e->spec.health_interval);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

void Supervisor::became_ready(const std::shared_ptr<Engine>& e) {
  e->ready_at = Clock::now();
  const std::string took = seconds_text(*e->ready_at - e->started_at);
  e->ring.note(fmt::format("ready after {}", took), unix_ms());
  set_state(*e, EngineState::ready, "");
  spdlog::info("engine {}: ready after {} (pid {})", e->spec.name, took, e->pid);
  if (on_ready_) {
    on_ready_(e->id);
  }
}

void Supervisor::terminate(const std::shared_ptr<Engine>& e, const std::string& why) {
  if (e->pid <= 0) {
    return;
  }
  if (!why.empty()) {
    e->kill_reason = why;
    e->ring.note(fmt::format("stopping: {}", why), unix_ms());
    spdlog::warn("engine {}: {}; stopping pid {}", e->spec.name, why, e->pid);
  }
  ::kill(-e->pid, SIGTERM);
  const auto gen = e->gen;
  e->grace.expires_after(e->spec.stop_grace);
  e->grace.async_wait([this, alive = alive_, e, gen](const boost::system::error_code& ec) {
    if (ec || !*alive || e->gen != gen || e->pid <= 0) {
      return;
    }
    e->ring.note(fmt::format("still running {} after SIGTERM: SIGKILL", seconds_text(e->spec.stop_grace)),
                 unix_ms());
    ::kill(-e->pid, SIGKILL);
  });
}

void Supervisor::exited(const std::shared_ptr<Engine>& e, int status) {
  // Whatever the engine left behind in its process group (workers) goes with it.
  ::kill(-e->pid, SIGKILL);
  e->pid = -1;
  e->grace.cancel();
  e->exit_status = status;
  if (e->open_streams <= 0) {
    finish_exit(e);
    return;
  }
  const auto gen = e->gen;
  e->drain.expires_after(kDrainWait);
  e->drain.async_wait([this, alive = alive_, e, gen](const boost::system::error_code& ec) {
    if (!ec && *alive && e->gen == gen && e->exit_status) {
      finish_exit(e);
    }
  });
}

void Supervisor::finish_exit(const std::shared_ptr<Engine>& e) {
  const int status = *e->exit_status;
  e->exit_status.reset();
  e->drain.cancel();
  ++e->gen;  // the run is over: its health check and readers stop touching the state
  e->last_exit = describe_wait_status(status);
  e->ring.note(e->last_exit, unix_ms());
  if (stopping_) {
    set_state(*e, EngineState::stopped, e->last_exit);
    spdlog::info("engine {}: stopped ({})", e->spec.name, e->last_exit);
    maybe_finished();
    return;
  }
  const std::string why = e->kill_reason.empty() ? e->last_exit : e->kill_reason + " (" + e->last_exit + ")";
  RunOutcome run;
  run.reached_ready = e->ready_at.has_value();
  if (e->ready_at) {
    run.ready_for = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *e->ready_at);
  }
  const RestartDecision d = e->tracker.after_exit(run);
  if (on_exit_) {
    on_exit_(e->id, why);
  }
  if (d.give_up) {
    const std::string reason = fmt::format("{}; gave up after {} start{} in a row that never became ready",
                                           why, e->tracker.consecutive_start_failures(),
                                           e->tracker.consecutive_start_failures() == 1 ? "" : "s");
    set_state(*e, EngineState::failed, reason);
    std::string tail;
    for (const auto& l : e->ring.tail(10)) {
      tail += "\n  | " + l.text;
    }
    spdlog::error("engine {}: failed: {}; last output:{}", e->spec.name, reason, tail);
    return;
  }
  set_state(*e, EngineState::restarting, fmt::format("{}; restarting in {}", why, seconds_text(d.delay)));
  e->ring.note(fmt::format("restarting in {}", seconds_text(d.delay)), unix_ms());
  spdlog::warn("engine {}: {}; restarting in {}", e->spec.name, why, seconds_text(d.delay));
  e->backoff.expires_after(d.delay);
  e->backoff.async_wait([this, alive = alive_, e](const boost::system::error_code& ec) {
    if (!ec && *alive && !stopping_ && e->pid <= 0) {
      spawn(e);
    }
  });
}

void Supervisor::stop() {
  if (stopping_) {
    return;
  }
  stopping_ = true;
  for (auto& e : engines_) {
    e->backoff.cancel();
    if (e->pid > 0) {
      set_state(*e, EngineState::stopping, "warden shutting down");
      terminate(e, "");
      e->ring.note("SIGTERM (warden shutting down)", unix_ms());
    } else if (!e->exit_status && e->state != EngineState::failed) {
      set_state(*e, EngineState::stopped, "warden shut down");
    }
  }
  maybe_finished();
}

bool Supervisor::stopped() const {
  if (!started_) {
    return true;
  }
  for (const auto& e : engines_) {
    if (e->pid > 0 || e->exit_status) {
      return false;
    }
  }
  return stopping_;
}

void Supervisor::maybe_finished() {
  if (!stopping_ || !stopped()) {
    return;
  }
  // Nothing left to wait for: release the signal handler and pooled sockets so the io_context can end.
  boost::system::error_code ignored;
  sigchld_.cancel(ignored);
  pool_.close_idle();
}

}  // namespace warden::supervisor
