// Runs the engine processes of `launch:` sections: starts each one, waits for GET /health, restarts it
// with exponential backoff when it exits, gives up (`failed`) on a command that keeps failing before it
// ever becomes ready, captures its output into a ring buffer, and stops everything on shutdown (SIGTERM
// to each process group, SIGKILL after the grace period). docs/engines.md describes the behaviour.
//
//   supervisor::Supervisor sup(ioc.get_executor());
//   auto id = sup.add(supervisor::engine_spec(launch, target));
//   sup.on_exit([&](auto id, const std::string& why) { /* mark its replicas unhealthy now */ });
//   sup.on_ready([&](auto id) { ... });
//   sup.start();                 // from the main thread (see process.hpp about PDEATHSIG)
//   ... sup.status(id), sup.logs(id, 50) ...
//   sup.stop();                  // asynchronous: the io_context keeps running until all are reaped
//
// Exits are learned through SIGCHLD (asio::signal_set; only our own pids are waited for, so other
// children of the process are not stolen). Output is read through asio::posix::stream_descriptor.
// Not thread-safe: everything runs on the executor given at construction (one thread).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "net/client.hpp"
#include "supervisor/launch.hpp"
#include "supervisor/log_ring.hpp"
#include "supervisor/restart.hpp"

namespace warden::supervisor {

struct EngineSpec {
  std::string name;  // for logs: "qwen3-4b-dp4" or "m[1]"
  CommandLine command;
  std::string health_host = "127.0.0.1";
  std::uint16_t health_port = 0;
  std::string health_target = "/health";
  std::chrono::milliseconds health_timeout{600000};
  std::chrono::milliseconds health_interval{200};
  std::chrono::milliseconds stop_grace{10000};
  RestartPolicy restart;
  std::size_t log_lines = 1000;
};

// The spec of the process serving `target` under `launch`.
EngineSpec engine_spec(const LaunchSpec& launch, const EngineTarget& target);

enum class EngineState { starting, ready, restarting, failed, stopping, stopped };
std::string_view to_string(EngineState s);

struct EngineStatus {
  EngineState state = EngineState::starting;
  std::string reason;          // why it is not ready ("exited with status 1; restarting in 2 s")
  int pid = 0;                 // 0 when no process runs
  int restarts = 0;            // times the process was started again
  std::int64_t since_unix_ms;  // when the state was entered
  std::string command;         // CommandLine::display()
  std::string last_exit;       // "killed by signal 9 (Killed)", empty before the first exit
};

class Supervisor {
 public:
  using EngineId = std::size_t;

  explicit Supervisor(boost::asio::any_io_executor ex);
  // Kills (SIGKILL) and reaps whatever still runs, synchronously: nothing outlives the supervisor.
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  EngineId add(EngineSpec spec);
  // Starts every engine added so far. Call once, from a thread that lives as long as the process.
  void start();
  // SIGTERM to every process group, SIGKILL after each engine's grace period. Returns at once; the
  // executor has work until every process is reaped (then stopped() is true). Idempotent.
  void stop();
  bool stopped() const;

  std::size_t size() const { return engines_.size(); }
  const EngineSpec& spec(EngineId id) const;
  EngineStatus status(EngineId id) const;
  // The last `n` captured lines (stdout, stderr and the supervisor's own notes), oldest first.
  std::vector<LogLine> logs(EngineId id, std::size_t n) const;

  // Called when an engine answered /health (ready) and when its process exited (with the reason), on
  // the supervisor's executor. Not called for the exits of stop().
  void on_ready(std::function<void(EngineId)> f) { on_ready_ = std::move(f); }
  void on_exit(std::function<void(EngineId, const std::string&)> f) { on_exit_ = std::move(f); }

 private:
  struct Engine;

  void spawn(const std::shared_ptr<Engine>& e);
  void arm_sigchld();
  void reap();
  void exited(const std::shared_ptr<Engine>& e, int status);
  void finish_exit(const std::shared_ptr<Engine>& e);
  void terminate(const std::shared_ptr<Engine>& e, const std::string& why);
  void became_ready(const std::shared_ptr<Engine>& e);
  void set_state(Engine& e, EngineState s, std::string reason);
  void maybe_finished();
  boost::asio::awaitable<void> read_output(std::shared_ptr<Engine> e, std::uint64_t gen, LogStream s, int fd);
  boost::asio::awaitable<void> wait_healthy(std::shared_ptr<Engine> e, std::uint64_t gen);

  boost::asio::any_io_executor ex_;
  boost::asio::signal_set sigchld_;
  net::ClientPool pool_;
  std::vector<std::shared_ptr<Engine>> engines_;
  std::function<void(EngineId)> on_ready_;
  std::function<void(EngineId, const std::string&)> on_exit_;
  std::shared_ptr<bool> alive_;
  bool started_ = false;
  bool stopping_ = false;
  bool sigchld_armed_ = false;
};

// The worst state among engines (failed > restarting > starting > stopping > stopped > ready): what a
// model served by several processes shows as its status.
EngineState worst_state(const std::vector<EngineState>& states);

}  // namespace warden::supervisor
