// Can the simulator keep up with its scaled clock? 4 ranks x 32 running sequences of the a4000 preset at
// --time-scale 10, the sim pinned to one core (taskset), 128 closed-loop streams driven from this process
// (pinned to the other core). Reports achieved engine steps/s, tokens/s, how far model time advanced
// per wall second (10 = on time) and the lag behind the scaled clock read from the sim's own /metrics.
//
//   build-*/bench/sim_bench            (needs the built lm-warden next to it; ~12 s)

#include <benchmark/benchmark.h>
#include <sched.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <unistd.h>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "../tests/support/child_process.hpp"
#include "net/client.hpp"
#include "net/sync_client.hpp"
#include "protocol/prometheus.hpp"

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using warden::net::ClientPool;
using warden::net::Endpoint;
using warden::net::Request;

struct SimFigures {
  double steps = 0;
  double generation_tokens = 0;
  double model_time = 0;
  double max_lag = 0;
  double behind = 0;  // max over ranks, at the scrape
  double running = 0;
};

SimFigures scrape(int port) {
  warden::net::SyncClient c("127.0.0.1", static_cast<std::uint16_t>(port));
  auto r = c.get("/metrics");
  SimFigures f;
  if (!r) {
    return f;
  }
  auto parsed = warden::protocol::parse_prometheus(r->body);
  if (!parsed) {
    return f;
  }
  for (const auto& s : parsed->samples) {
    if (s.name == "warden_sim_steps_total") {
      f.steps += s.value;
    } else if (s.name == "vllm:generation_tokens_total") {
      f.generation_tokens += s.value;
    } else if (s.name == "warden_sim_model_time_seconds") {
      f.model_time = s.value;
    } else if (s.name == "warden_sim_max_lag_seconds") {
      f.max_lag = std::max(f.max_lag, s.value);
    } else if (s.name == "warden_sim_behind_seconds") {
      f.behind = std::max(f.behind, s.value);
    } else if (s.name == "vllm:num_requests_running") {
      f.running += s.value;
    }
  }
  return f;
}

// CPU seconds (user + system) the process has used so far.
double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');
  if (close == std::string::npos) {
    return 0;
  }
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  double utime = 0;
  double stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) {
      utime = std::stod(f);
    } else if (i == 15) {
      stime = std::stod(f);
    }
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
}

void BM_SimKeepsUpWithScaledClock(benchmark::State& state) {
  const int ranks = 4;
  const int streams = 128;  // 32 per rank: the preset's max_num_seqs
  const double time_scale = 10;
  const auto warmup = 2s;
  const auto window = 8s;
  test_support::ChildProcess sim({"/usr/bin/taskset", "-c", "0", WARDEN_BINARY, "sim", "--port", "0",
                                  "--data-parallel-size", std::to_string(ranks), "--preset", "a4000-qwen3-4b",
                                  "--time-scale", std::to_string(time_scale), "--served-model-name", "m",
                                  "--log-level", "warn"});
  int port = sim.wait_for_port();
  if (const char* ext = std::getenv("SIM_BENCH_PORT")) {
    port = std::atoi(ext);  // drive an already running sim instead (e.g. one started under perf)
  }
  pin_to_cpu(1);  // the load generator stays off the sim's core

  for (auto _ : state) {
    asio::io_context ioc;
    ClientPool pool(ioc.get_executor());
    Endpoint ep{"127.0.0.1", static_cast<std::uint16_t>(port)};
    bool stop = false;
    std::uint64_t stream_errors = 0;
    auto drive = [&](int i) -> asio::awaitable<void> {
      // ~200-token prompt + 1,000 output tokens: 32 of them fit a rank's 2,500 blocks without preemption.
      std::string body =
          R"({"model":"m","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":")" +
          std::string(800, static_cast<char>('a' + i % 26)) + " stream " + std::to_string(i) + R"("}]})";
      int turn = 0;
      while (!stop) {
        Request req{warden::net::http::verb::post, "/v1/chat/completions", 11};
        req.set(warden::net::http::field::content_type, "application/json");
        req.set("X-data-parallel-rank", std::to_string(i % ranks));
        req.body() = body + std::string(static_cast<std::size_t>(turn++ % 2), ' ');
        auto r = co_await pool.send(ep, std::move(req));
        if (!r) {
          ++stream_errors;
          co_return;
        }
        while (!stop) {
          auto piece = co_await r->next();
          if (!piece || piece->done) {
            break;
          }
        }
      }
    };
    for (int i = 0; i < streams; ++i) {
      asio::co_spawn(ioc, drive(i), asio::detached);
    }
    SimFigures a;
    SimFigures b;
    double cpu_a = 0;
    double cpu_b = 0;
    auto t0 = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point t1;
    std::chrono::steady_clock::time_point t2;
    std::thread observer([&] {
      std::this_thread::sleep_for(warmup);  // a benchmark's measurement window, not synchronisation
      t1 = std::chrono::steady_clock::now();
      cpu_a = cpu_seconds(sim.pid());
      a = scrape(port);
      std::this_thread::sleep_for(window);
      t2 = std::chrono::steady_clock::now();
      cpu_b = cpu_seconds(sim.pid());
      b = scrape(port);
      asio::post(ioc, [&] {
        stop = true;
        pool.close_idle();
        ioc.stop();
      });
    });
    ioc.run();
    observer.join();
    (void)t0;
    double wall = std::chrono::duration<double>(t2 - t1).count();
    state.counters["steps_per_s"] = (b.steps - a.steps) / wall;
    state.counters["tokens_per_s"] = (b.generation_tokens - a.generation_tokens) / wall;
    state.counters["model_s_per_wall_s"] = (b.model_time - a.model_time) / wall;
    state.counters["running_seqs"] = b.running;
    // Share of one core the sim used: well below 1 while lagging means the host starved it (other load).
    state.counters["sim_cpu_core_fraction"] = (cpu_b - cpu_a) / wall;
    state.counters["max_lag_model_s"] = b.max_lag;
    state.counters["behind_model_s"] = b.behind;
    state.counters["stream_errors"] = static_cast<double>(stream_errors);
  }
  sim.stop();
}

BENCHMARK(BM_SimKeepsUpWithScaledClock)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
