// The Supervisor in this process with real children: readiness through /health (the lm-warden sim),
// restart after SIGKILL, a command that fails at once, exec failures, a health timeout, and shutdown
// that leaves no process of the group behind (SIGKILL after the grace period for one ignoring SIGTERM).
#include "supervisor/supervisor.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <regex>

#include "supervisor/supervisor_support.hpp"

namespace warden::supervisor {
namespace {

using namespace std::chrono_literals;
using supervisor_test::free_port;
using supervisor_test::process_alive;

// Runs the io_context until `cond` holds or the timeout passes.
bool run_until(boost::asio::io_context& ioc, const std::function<bool()>& cond,
               std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    if (ioc.stopped()) {
      ioc.restart();
    }
    ioc.run_for(10ms);
  }
  return true;
}

std::string all_logs(const Supervisor& s, Supervisor::EngineId id) {
  std::string out;
  for (const auto& l : s.logs(id, 1000)) {
    out += std::string(to_string(l.stream)) + ": " + l.text + "\n";
  }
  return out;
}

EngineSpec shell(const std::string& script, int health_port = 1) {
  EngineSpec s;
  s.name = "sh";
  s.command.argv = {"/bin/sh", "-c", script};
  s.health_port = static_cast<std::uint16_t>(health_port);
  s.health_timeout = 20s;
  s.stop_grace = 5s;
  s.restart.initial_backoff = 20ms;
  s.restart.max_backoff = 100ms;
  return s;
}

TEST(Supervisor, SimBecomesReadyIsRestartedAfterSigkillAndStops) {
  boost::asio::io_context ioc;
  Supervisor sup(ioc.get_executor());
  const int port = free_port();
  EngineSpec s;
  s.name = "sim";
  s.command.argv = {WARDEN_BINARY, "sim", "--port", std::to_string(port), "--preset", "instant"};
  s.command.env = {{"WARDEN_TEST_MARK", "yes"}};
  s.health_port = static_cast<std::uint16_t>(port);
  s.health_timeout = 30s;
  s.restart.initial_backoff = 50ms;
  auto id = sup.add(s);
  int readies = 0;
  std::vector<std::string> exits;
  sup.on_ready([&](auto) { ++readies; });
  sup.on_exit([&](auto, const std::string& why) { exits.push_back(why); });
  sup.start();
  ASSERT_TRUE(run_until(ioc, [&] { return sup.status(id).state == EngineState::ready; }))
      << all_logs(sup, id);
  EXPECT_EQ(readies, 1);
  const int pid1 = sup.status(id).pid;
  ASSERT_GT(pid1, 0);
  EXPECT_EQ(::getpgid(pid1), pid1);  // its own process group
  EXPECT_NE(all_logs(sup, id).find("listening on http://127.0.0.1:" + std::to_string(port)),
            std::string::npos);
  std::ifstream env("/proc/" + std::to_string(pid1) + "/environ");
  std::string envs((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
  EXPECT_NE(envs.find("WARDEN_TEST_MARK=yes"), std::string::npos);
  EXPECT_NE(envs.find("PATH="), std::string::npos);  // the warden's environment is inherited

  ::kill(pid1, SIGKILL);
  ASSERT_TRUE(run_until(ioc, [&] { return !exits.empty(); })) << all_logs(sup, id);
  EXPECT_NE(exits[0].find("killed by signal 9"), std::string::npos) << exits[0];
  EXPECT_EQ(sup.status(id).state, EngineState::restarting);
  ASSERT_TRUE(run_until(ioc, [&] { return sup.status(id).state == EngineState::ready; }))
      << all_logs(sup, id);
  const EngineStatus st = sup.status(id);
  EXPECT_NE(st.pid, pid1);
  EXPECT_EQ(st.restarts, 1);
  EXPECT_EQ(readies, 2);
  EXPECT_NE(st.last_exit.find("killed by signal 9"), std::string::npos);

  sup.stop();
  ASSERT_TRUE(run_until(ioc, [&] { return sup.stopped(); }));
  EXPECT_EQ(sup.status(id).state, EngineState::stopped);
  EXPECT_FALSE(process_alive(st.pid));
  EXPECT_EQ(exits.size(), 1u);  // the exit caused by stop() is not reported as a failure
  // Nothing of the supervisor keeps the io_context busy once everything is reaped.
  ioc.restart();
  ioc.run_for(5s);
  EXPECT_TRUE(ioc.stopped());
}

TEST(Supervisor, CommandThatFailsAtOnceEndsFailedWithItsOutput) {
  boost::asio::io_context ioc;
  Supervisor sup(ioc.get_executor());
  auto spec = shell("echo starting up; echo 'fatal: no GPU found' >&2; exit 3");
  spec.restart.max_start_failures = 3;
  auto id = sup.add(spec);
  int exits = 0;
  sup.on_exit([&](auto, const std::string&) { ++exits; });
  sup.start();
  ASSERT_TRUE(run_until(ioc, [&] { return sup.status(id).state == EngineState::failed; }))
      << all_logs(sup, id);
  const EngineStatus st = sup.status(id);
  EXPECT_NE(st.reason.find("exited with status 3"), std::string::npos) << st.reason;
  EXPECT_NE(st.reason.find("gave up after 3 starts"), std::string::npos) << st.reason;
  EXPECT_EQ(st.restarts, 2);
  EXPECT_EQ(st.pid, 0);
  EXPECT_EQ(exits, 3);
  const auto tail = sup.logs(id, 4);
  ASSERT_EQ(tail.size(), 4u);
  // The last run's output is in before the status changed (pipes drained first).
  EXPECT_EQ(tail[1].text, "starting up");
  EXPECT_EQ(tail[2].text, "fatal: no GPU found");
  EXPECT_EQ(tail[2].stream, LogStream::err);
  EXPECT_EQ(tail[3].text, "exited with status 3");
  EXPECT_EQ(tail[3].stream, LogStream::warden);
  sup.stop();
  EXPECT_TRUE(run_until(ioc, [&] { return sup.stopped(); }));
  EXPECT_EQ(sup.status(id).state, EngineState::failed);  // stays visible after shutdown
}

TEST(Supervisor, ExecFailuresAreFailedWithoutRetrying) {
  boost::asio::io_context ioc;
  Supervisor sup(ioc.get_executor());
  EngineSpec missing = shell("");
  missing.command.argv = {"/nonexistent/engine", "--port", "1"};
  EngineSpec not_in_path = shell("");
  not_in_path.command.argv = {"lm-warden-no-such-program-xyz"};
  EngineSpec not_executable = shell("");
  not_executable.command.argv = {"/tmp"};  // a directory: EACCES
  auto a = sup.add(missing);
  auto b = sup.add(not_in_path);
  auto c = sup.add(not_executable);
  sup.start();
  EXPECT_EQ(sup.status(a).state, EngineState::failed);
  EXPECT_NE(sup.status(a).reason.find("cannot execute '/nonexistent/engine': No such file or directory"),
            std::string::npos)
      << sup.status(a).reason;
  EXPECT_NE(sup.status(b).reason.find("not found in PATH"), std::string::npos);
  EXPECT_NE(sup.status(c).reason.find("Permission denied"), std::string::npos) << sup.status(c).reason;
  EXPECT_EQ(sup.status(a).restarts, 0);
  EXPECT_EQ(sup.logs(a, 10).back().text, sup.status(a).reason);
}

TEST(Supervisor, NoHealthInTimeIsAFailedStart) {
  boost::asio::io_context ioc;
  Supervisor sup(ioc.get_executor());
  auto spec = shell("echo waiting forever; exec sleep 1000", free_port());
  spec.health_timeout = 300ms;
  spec.restart.max_start_failures = 2;
  auto id = sup.add(spec);
  sup.start();
  ASSERT_TRUE(run_until(ioc, [&] { return sup.status(id).state == EngineState::failed; }))
      << all_logs(sup, id);
  const auto reason = sup.status(id).reason;
  EXPECT_NE(reason.find("no answer 200 from GET /health within 300 ms"), std::string::npos) << reason;
  EXPECT_NE(reason.find("killed by signal 15"), std::string::npos) << reason;  // SIGTERM was enough
  EXPECT_EQ(sup.status(id).restarts, 1);
}

TEST(Supervisor, StopKillsTheWholeGroupAndSigkillsWhatIgnoresSigterm) {
  boost::asio::io_context ioc;
  Supervisor sup(ioc.get_executor());
  // The shell ignores SIGTERM; its background child does not: both must be gone after stop().
  auto spec = shell("trap '' TERM; sleep 1000 & echo child $!; while :; do sleep 0.05; done", free_port());
  spec.stop_grace = 300ms;
  auto id = sup.add(spec);
  sup.start();
  std::smatch m;
  std::string logs;
  static const std::regex child_re(R"(child (\d+))");
  ASSERT_TRUE(run_until(ioc, [&] {
    logs = all_logs(sup, id);
    return std::regex_search(logs, m, child_re);
  }));
  const int child = std::stoi(m[1].str());
  const int leader = sup.status(id).pid;
  ASSERT_TRUE(process_alive(child));
  ASSERT_TRUE(process_alive(leader));
  const auto t0 = std::chrono::steady_clock::now();
  sup.stop();
  EXPECT_EQ(sup.status(id).state, EngineState::stopping);
  ASSERT_TRUE(run_until(
      ioc, [&] { return sup.stopped(); }, 10s));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);  // the grace period was honoured first
  EXPECT_FALSE(process_alive(leader));
  EXPECT_TRUE(supervisor_test::wait_until([&] { return !process_alive(child); }));
  EXPECT_NE(all_logs(sup, id).find("SIGKILL"), std::string::npos);
  EXPECT_NE(sup.status(id).last_exit.find("killed by signal 9"), std::string::npos);
}

TEST(Supervisor, DestructorKillsWhatStillRuns) {
  int pid = 0;
  {
    boost::asio::io_context ioc;
    Supervisor sup(ioc.get_executor());
    auto id = sup.add(shell("exec sleep 1000", free_port()));
    sup.start();
    pid = sup.status(id).pid;
    ASSERT_TRUE(process_alive(pid));
  }
  EXPECT_FALSE(process_alive(pid));
}

}  // namespace
}  // namespace warden::supervisor
