// What does the warden add on top of the engine, compared with nginx as a plain reverse proxy? One run,
// side by side, against one `lm-warden sim` (instant preset, 4 DP ranks):
//   1. latency: sequential streamed chat requests (4 output tokens) over a kept-alive connection, the three
//      targets interleaved request by request; p50/p99 per target and added over direct, for the whole
//      response and for the first generated token; once with a small body, once with an agent-sized one
//      (200 KB of history);
//   2. throughput: 16 closed-loop client threads per target for a few seconds, requests/s;
//   3. 1,000 concurrent open SSE streams (a second sim slowed down so generations last minutes): the
//      proxy's RSS before and after opening them, KiB per open stream.
// nginx (Debian nginx-light) runs from a generated config in a temp dir on a free loopback port: one worker
// (the warden runs one I/O thread), upstream keepalive, proxy_buffering off, access log on (the warden logs
// one line per request too), client_body_buffer_size 1m (with the default 16k an agent-sized body goes
// through a temp file and now and then stalls ~40 ms: a weaker baseline than nginx can be).
//
// With 2 or more CPUs each proxy runs alone on CPU 1 and the sim and the client on CPU 0 (--no-pin: the
// scheduler decides), so that both proxies are measured in the same placement.
//
//   build-*/bench/gateway_bench [--requests N] [--large-requests N] [--seconds S] [--streams N] [--no-pin]

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../tests/support/child_process.hpp"
#include "../tests/support/http.hpp"
#include "../tests/support/wait.hpp"
#include "net/sync_client.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_support::ChildProcess;

const std::string kServed = "Qwen/Qwen3-4B-Instruct-2507";

// Keeps a process (0: this one, and what it starts afterwards) on one CPU.
bool pin_to_cpu(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(pid, sizeof set, &set) == 0;
}

// Resident set of a process in KiB (VmRSS).
long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::atol(line.c_str() + 6);
    }
  }
  return 0;
}

// nginx worker processes are children of the master: their RSS is what grows with connections.
long nginx_workers_rss_kib(pid_t master) {
  long total = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) {
      continue;
    }
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    auto close = stat.rfind(')');
    if (close == std::string::npos) {
      continue;
    }
    std::istringstream rest(stat.substr(close + 2));
    char state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == master) {
      total += rss_kib(std::stoi(name));
    }
  }
  return total;
}

struct Nginx {
  std::filesystem::path dir;
  std::unique_ptr<ChildProcess> proc;
  int port = 0;

  // `cpu` >= 0: the worker runs on that CPU only.
  Nginx(int upstream_port, int port_, int cpu = -1) : port(port_) {
    dir = std::filesystem::temp_directory_path() /
          ("warden-bench-nginx-" + std::to_string(::getpid()) + "-" + std::to_string(port_));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "nginx.conf")
        << "worker_processes 1;\n"
        << (cpu >= 0 ? "worker_cpu_affinity " + std::string("1") +
                           std::string(static_cast<std::size_t>(cpu), '0') + ";\n"
                     : std::string())
        << "pid " << (dir / "nginx.pid").string() << ";\nerror_log " << (dir / "error.log").string()
        << " warn;\n"
           "worker_rlimit_nofile 20000;\n"
           "events { worker_connections 8192; }\n"
           "http {\n"
           "  access_log "
        << (dir / "access.log").string()
        << ";\n"
           "  client_body_temp_path "
        << (dir / "body").string() << ";\n  proxy_temp_path " << (dir / "proxy").string()
        << ";\n  fastcgi_temp_path " << (dir / "fcgi").string() << ";\n  uwsgi_temp_path "
        << (dir / "uwsgi").string() << ";\n  scgi_temp_path " << (dir / "scgi").string()
        << ";\n"
           "  upstream engine { server 127.0.0.1:"
        << upstream_port
        << "; keepalive 256; }\n"
           "  server {\n"
           "    listen 127.0.0.1:"
        << port
        << ";\n"
           "    client_max_body_size 32m;\n"
           "    client_body_buffer_size 1m;\n"  // agent-sized bodies in memory, not temp files
           "    location / {\n"
           "      proxy_pass http://engine;\n"
           "      proxy_http_version 1.1;\n"
           "      proxy_set_header Connection \"\";\n"
           "      proxy_buffering off;\n"
           "      proxy_read_timeout 600s;\n"
           "    }\n"
           "  }\n"
           "}\n";
    proc = std::make_unique<ChildProcess>(std::vector<std::string>{
        "/usr/sbin/nginx", "-p", dir.string(), "-c", (dir / "nginx.conf").string(), "-g", "daemon off;"});
    // nginx prints nothing when it is up: wait until it answers.
    const bool up = test_support::wait_until(
        [&] {
          warden::net::SyncClient c("127.0.0.1", static_cast<std::uint16_t>(port));
          auto r = c.get("/health");
          return r && r->status == 200;
        },
        5s);
    if (!up) {
      throw std::runtime_error("nginx did not start: " + proc->stderr_text());
    }
  }
  ~Nginx() {
    proc.reset();
    std::filesystem::remove_all(dir);
  }
};

struct Target {
  std::string name;
  int port;
  std::string model;
};

std::string body_for(const std::string& model, int max_tokens, int i) {
  return R"({"model":")" + model + R"(","max_tokens":)" + std::to_string(max_tokens) +
         R"(,"stream":true,"messages":[{"role":"system","content":"You are a coding agent with a long system prompt."},)"
         R"({"role":"user","content":"question )" +
         std::to_string(i % 64) + R"("}]})";
}

// About `bytes` of conversation history: the same for every request of a session, as an agent resends it.
std::string large_history(std::size_t bytes) {
  std::string h;
  h.reserve(bytes + 64);
  for (int i = 0; h.size() < bytes; ++i) {
    h += "Turn " + std::to_string(i) + ": read src/module_" + std::to_string(i % 97) +
         ".cpp, found the function, edited it and ran the tests again. ";
  }
  return h;
}

std::string large_body_for(const std::string& model, const std::string& history, int i) {
  return R"({"model":")" + model +
         R"(","max_tokens":4,"stream":true,"messages":[{"role":"system","content":")" + history +
         R"("},{"role":"user","content":"question )" + std::to_string(i % 64) + R"("}]})";
}

// An OpenAI chunk with generated text: "content":"<at least one character>" (the first chunk only
// carries the role and an empty content).
bool has_token(std::string_view piece) {
  constexpr std::string_view kContent = R"("content":")";
  for (auto at = piece.find(kContent); at != std::string_view::npos; at = piece.find(kContent, at + 1)) {
    const std::size_t next = at + kContent.size();
    if (next < piece.size() && piece[next] != '"') {
      return true;
    }
  }
  return false;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  const auto idx = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(idx, v.size() - 1)];
}

std::string temp_config(int sim_port, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const auto path = dir / "warden.yaml";
  std::ofstream(path) << "metrics: { scrape_interval: 1s }\nmodels:\n  - name: bench\n    served_model_name: "
                      << kServed
                      << "\n    max_num_seqs: 512\n    replicas: { data_parallel: { url: http://127.0.0.1:"
                      << sim_port << ", size: 4 } }\n";
  return path.string();
}

// Opens `n` streaming requests on raw sockets and waits until each has received response bytes.
std::vector<int> open_streams(int port, const std::string& model, int n) {
  std::vector<int> fds;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      break;
    }
    const std::string body = body_for(model, 20000, i);
    const std::string req =
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "X-Warden-Session: stream-" +
        std::to_string(i) + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  // Drain what arrives so nothing backs up, until every stream has answered (bounded).
  std::vector<bool> answered(fds.size(), false);
  std::size_t count = 0;
  const auto deadline = Clock::now() + 60s;
  char buf[16384];
  while (count < fds.size() && Clock::now() < deadline) {
    std::vector<pollfd> p;
    for (int fd : fds) {
      p.push_back({fd, POLLIN, 0});
    }
    if (::poll(p.data(), p.size(), 200) <= 0) {
      continue;
    }
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p[i].revents & POLLIN) {
        if (::recv(fds[i], buf, sizeof buf, MSG_DONTWAIT) > 0 && !answered[i]) {
          answered[i] = true;
          ++count;
        }
      }
    }
  }
  if (count < fds.size()) {
    std::fprintf(stderr, "only %zu of %zu streams answered\n", count, fds.size());
  }
  return fds;
}

void drain(const std::vector<int>& fds) {
  char buf[16384];
  for (int fd : fds) {
    while (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int requests = 3000;
  int seconds = 4;
  int streams = 1000;
  int large_requests = 300;
  bool pin = std::thread::hardware_concurrency() >= 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-pin") {
      pin = false;
      continue;
    }
    if (i + 1 >= argc) {
      break;
    }
    if (a == "--requests") {
      requests = std::atoi(argv[++i]);
    } else if (a == "--seconds") {
      seconds = std::atoi(argv[++i]);
    } else if (a == "--streams") {
      streams = std::atoi(argv[++i]);
    } else if (a == "--large-requests") {
      large_requests = std::atoi(argv[++i]);
    }
  }
  // Placement decides a good part of a loopback latency on a small machine (which process shares a CPU
  // with which). Both proxies get the same: CPU 1 to themselves; the sim and the client threads on CPU 0.
  if (pin) {
    pin = pin_to_cpu(0, 0);  // this process, and the sim started below, inherit CPU 0
  }
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);  // children (sim, warden, nginx) inherit it

  const auto tmp = std::filesystem::temp_directory_path() / ("warden-bench-" + std::to_string(::getpid()));
  ChildProcess sim({WARDEN_BINARY, "sim", "--port", "0", "--data-parallel-size", "4", "--preset", "instant",
                    "--max-num-seqs", "512", "--served-model-name", kServed, "--log-level", "warn"});
  const int sim_port = sim.wait_for_port();
  ChildProcess warden({WARDEN_BINARY, "serve", "--config", temp_config(sim_port, tmp / "w1"), "--listen",
                       "127.0.0.1:0", "--state-dir", (tmp / "w1" / "state").string()});
  const int warden_port = warden.wait_for_port();
  if (pin) {
    pin_to_cpu(warden.pid(), 1);
  }
  Nginx nginx(sim_port, test_support::free_port(), pin ? 1 : -1);

  const std::vector<Target> targets{
      {"direct", sim_port, kServed}, {"warden", warden_port, "bench"}, {"nginx", nginx.port, kServed}};

  // 1. Latency, interleaved so every target sees the same machine state: a small request, then an
  // agent-sized one (a 200 KB history, what Claude Code resends every turn).
  using Latencies = std::map<std::string, std::vector<double>>;
  // Per request the whole response's time and the time to the first generated token (the first event with
  // non-empty delta content: what an agent's user waits for).
  auto measure = [&](int n, const std::function<std::string(const std::string&, int)>& body,
                     Latencies& first_token) -> Latencies {
    Latencies out;
    std::vector<std::unique_ptr<warden::net::SyncClient>> clients;
    for (const auto& t : targets) {
      clients.push_back(
          std::make_unique<warden::net::SyncClient>("127.0.0.1", static_cast<std::uint16_t>(t.port)));
    }
    const int warmup = std::max(20, n / 15);
    for (int i = 0; i < n + warmup; ++i) {
      // The order rotates every round, so that no target always follows the same one (whose leftover
      // work, in the sim or on the shared proxy CPU, would otherwise always land on the same target).
      for (std::size_t j = 0; j < targets.size(); ++j) {
        const std::size_t k = (j + static_cast<std::size_t>(i)) % targets.size();
        const std::string b = body(targets[k].model, i);
        std::optional<Clock::time_point> token_at;
        const auto start = Clock::now();
        auto r = clients[k]->post("/v1/chat/completions", b,
                                  {{"X-Warden-Session", "lat-" + std::to_string(i % 64)}},
                                  [&token_at](std::string_view piece) {
                                    if (!token_at && has_token(piece)) {
                                      token_at = Clock::now();
                                    }
                                    return true;
                                  });
        const auto end = Clock::now();
        if (!r || r->status != 200 || !token_at) {
          throw std::runtime_error(targets[k].name + ": request failed");
        }
        if (i >= warmup) {
          out[targets[k].name].push_back(std::chrono::duration<double, std::milli>(end - start).count());
          first_token[targets[k].name].push_back(
              std::chrono::duration<double, std::milli>(*token_at - start).count());
        }
      }
    }
    return out;
  };
  Latencies lat;
  Latencies lat_large;
  Latencies ttft;
  Latencies ttft_large;
  try {
    lat = measure(
        requests, [](const std::string& model, int i) { return body_for(model, 4, i); }, ttft);
    const std::string history = large_history(200'000);
    lat_large = measure(
        large_requests, [&](const std::string& model, int i) { return large_body_for(model, history, i); },
        ttft_large);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }

  // 2. Throughput: closed loop, 16 connections.
  std::map<std::string, double> rps;
  for (const auto& t : targets) {
    std::atomic<long> done{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int c = 0; c < 16; ++c) {
      threads.emplace_back([&, c] {
        warden::net::SyncClient client("127.0.0.1", static_cast<std::uint16_t>(t.port));
        int i = 0;
        while (!stop.load()) {
          auto r = client.post("/v1/chat/completions", body_for(t.model, 4, c * 1000 + i++),
                               {{"X-Warden-Session", "tp-" + std::to_string(c)}});
          if (r && r->status == 200) {
            done.fetch_add(1);
          }
        }
      });
    }
    const auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));  // the measurement window itself
    stop = true;
    for (auto& th : threads) {
      th.join();
    }
    rps[t.name] =
        static_cast<double>(done.load()) / std::chrono::duration<double>(Clock::now() - start).count();
  }

  // 3. Open streams: a slow sim keeps every generation going for minutes.
  ChildProcess slow({WARDEN_BINARY, "sim", "--port", "0", "--data-parallel-size", "4", "--preset", "instant",
                     "--time-scale", "0.002", "--max-num-seqs", "512", "--max-model-len", "40000",
                     "--served-model-name", kServed, "--log-level", "warn"});
  const int slow_port = slow.wait_for_port();
  ChildProcess warden2({WARDEN_BINARY, "serve", "--config", temp_config(slow_port, tmp / "w2"), "--listen",
                        "127.0.0.1:0", "--state-dir", (tmp / "w2" / "state").string(), "--log-level",
                        "warn"});
  const int warden2_port = warden2.wait_for_port();
  Nginx nginx2(slow_port, test_support::free_port());

  const long w_before = rss_kib(warden2.pid());
  auto wfds = open_streams(warden2_port, "bench", streams);
  drain(wfds);
  const long w_after = rss_kib(warden2.pid());
  for (int fd : wfds) {
    ::close(fd);
  }
  const long n_before = nginx_workers_rss_kib(nginx2.proc->pid());
  auto nfds = open_streams(nginx2.port, kServed, streams);
  drain(nfds);
  const long n_after = nginx_workers_rss_kib(nginx2.proc->pid());
  for (int fd : nfds) {
    ::close(fd);
  }

  std::printf(
      "\nLM Warden gateway bench: %d sequential streamed requests per target (4 output tokens), "
      "interleaved;\n"
      "16 closed-loop connections for %d s per target; sim instant preset, 4 DP ranks, all on loopback;\n"
      "%s.\n",
      requests, seconds, pin ? "each proxy alone on CPU 1, sim and client on CPU 0" : "no CPU pinning");
  // One latency table: per target p50/p99 and what it adds over direct, then the paired difference
  // warden - nginx (request i of each target ran back to back, which cancels most machine noise).
  auto report = [&](const char* title, Latencies& l, bool with_rps) {
    const double d50 = percentile(l["direct"], 0.5);
    const double d99 = percentile(l["direct"], 0.99);
    std::printf(
        "\n%s\n| target | p50 ms | p99 ms | added p50 ms | added p99 ms |%s\n|---|---|---|---|---|%s\n",
        title, with_rps ? " requests/s |" : "", with_rps ? "---|" : "");
    for (const auto& t : targets) {
      const double p50 = percentile(l[t.name], 0.5);
      const double p99 = percentile(l[t.name], 0.99);
      std::printf("| %s | %.3f | %.3f | %+.3f | %+.3f |", t.name.c_str(), p50, p99, p50 - d50, p99 - d99);
      if (with_rps) {
        std::printf(" %.0f |", rps[t.name]);
      }
      std::printf("\n");
    }
    std::vector<double> paired;
    for (std::size_t i = 0; i < l["warden"].size() && i < l["nginx"].size(); ++i) {
      paired.push_back(l["warden"][i] - l["nginx"][i]);
    }
    const double added_w = percentile(l["warden"], 0.5) - d50;
    const double added_n = percentile(l["nginx"], 0.5) - d50;
    std::printf(
        "warden - nginx, paired per request: median %+.1f us, p25 %+.1f us, p75 %+.1f us; "
        "added p50 ratio warden/nginx %.2f\n",
        percentile(paired, 0.5) * 1000, percentile(paired, 0.25) * 1000, percentile(paired, 0.75) * 1000,
        added_n > 0 ? added_w / added_n : 0.0);
  };
  report("Small request (250 B body), whole response:", lat, true);
  report("Small request, time to first token:", ttft, false);
  char title[96];
  std::snprintf(title, sizeof title,
                "Agent-sized request (200 KB history), %d per target, whole response:", large_requests);
  report(title, lat_large, false);
  report("Agent-sized request, time to first token:", ttft_large, false);
  std::printf("\nOpen SSE streams: %zu through the warden, %zu through nginx\n", wfds.size(), nfds.size());
  std::printf("| proxy | RSS before KiB | RSS with streams KiB | KiB per open stream |\n|---|---|---|---|\n");
  std::printf(
      "| warden | %ld | %ld | %.1f |\n", w_before, w_after,
      wfds.empty() ? 0.0 : static_cast<double>(w_after - w_before) / static_cast<double>(wfds.size()));
  std::printf(
      "| nginx (worker) | %ld | %ld | %.1f |\n", n_before, n_after,
      nfds.empty() ? 0.0 : static_cast<double>(n_after - n_before) / static_cast<double>(nfds.size()));
  const double small_d50 = percentile(lat["direct"], 0.5);
  const double added_warden = percentile(lat["warden"], 0.5) - small_d50;
  const double added_nginx = percentile(lat["nginx"], 0.5) - small_d50;
  const double kib_per_stream =
      wfds.empty() ? 0.0 : static_cast<double>(w_after - w_before) / static_cast<double>(wfds.size());
  std::printf(
      "\nTargets (small request): added p50 no worse than nginx's: %+.3f vs %+.3f ms, %s; "
      "<= 64 KiB per open stream: %.1f KiB at %zu streams, %s.\n",
      added_warden, added_nginx, added_warden <= added_nginx ? "met" : "missed", kib_per_stream, wfds.size(),
      kib_per_stream <= 64.0 ? "met" : "missed");
  std::filesystem::remove_all(tmp);
  return 0;
}
