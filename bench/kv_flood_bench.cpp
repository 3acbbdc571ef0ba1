// The warden under a flood of KV cache events (issue 40, "Fast"): event-to-index lag and what the flood does
// to a request. One run starts `lm-warden sim` (instant preset, 7 data-parallel ranks, publishing nothing)
// and `lm-warden serve` in front of it listening to 7 publishers, which this process binds on 127.0.0.1
// (one ZMQ PUB per rank, vLLM's multipart [topic, seq, msgpack batch]) and feeds with each rank's realistic
// stream (kv_stream.hpp: agent threads, 16-token blocks, the LRU's evictions, session ids and tokens).
//   1. idle: sequential small chat requests through the warden, no events (the indexes hold the seeding);
//   2. flood: `--rate` events a second over all ranks, `--steps` batches a second per rank, each batch's
//      `ts` stamped just before its send, for `--seconds`, with the same requests running meanwhile;
// then the lag of the flood's batches from the warden's histogram (lm_warden_kv_lag_seconds: its p99 read
// as Prometheus' histogram_quantile reads it, and the share within 1 ms) and the requests' p50 with and
// without the flood. Both children are stopped by pid when the run ends.
//   build/bench/kv_flood_bench [--seconds 20] [--rate 50000] [--steps 200] [--idle-requests 2000]
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../tests/support/child_process.hpp"
#include "../tests/support/wait.hpp"
#include "kv_stream.hpp"
#include "net/sync_client.hpp"
#include "supervisor/free_ports.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test_support::ChildProcess;
namespace kv = warden::protocol::kv;

const std::string kServed = "Qwen/Qwen3-4B-Instruct-2507";
constexpr int kRanks = 7;

struct Options {
  int seconds = 20;
  double rate = 50'000;
  int steps = 200;  // batches a second per rank
  int idle_requests = 2'000;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seconds") {
      o.seconds = std::atoi(argv[i + 1]);
    } else if (a == "--rate") {
      o.rate = std::atof(argv[i + 1]);
    } else if (a == "--steps") {
      o.steps = std::atoi(argv[i + 1]);
    } else if (a == "--idle-requests") {
      o.idle_requests = std::atoi(argv[i + 1]);
    }
  }
  return o;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The ranks' publishers: PUB sockets bound on 127.0.0.1, first port + rank, used by one thread at a time.
class Publishers {
 public:
  explicit Publishers(int first_port) : context_(zmq_ctx_new()) {
    for (int r = 0; r < kRanks; ++r) {
      void* s = zmq_socket(context_, ZMQ_PUB);
      const int hwm = 1'000'000;  // the engine's side never drops here: a loss would be the warden's
      const int linger = 0;
      zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
      zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
      const std::string at = "tcp://127.0.0.1:" + std::to_string(first_port + r);
      if (zmq_bind(s, at.c_str()) != 0) {
        throw std::runtime_error("cannot bind " + at + ": " + zmq_strerror(zmq_errno()));
      }
      sockets_.push_back(s);
      kv_stream::Shape shape;
      shape.capacity_blocks = 73'000;
      shape.seed = static_cast<std::uint64_t>(r) + 1;
      streams_.emplace_back(shape);
    }
  }
  ~Publishers() {
    for (void* s : sockets_) {
      zmq_close(s);
    }
    zmq_ctx_term(context_);
  }
  Publishers(const Publishers&) = delete;
  Publishers& operator=(const Publishers&) = delete;

  // `rate` events a second over all ranks, in `steps` batches a second per rank, for `length`; returns the
  // events sent.
  std::uint64_t run(double rate, int steps, Clock::duration length) {
    const auto per_batch = static_cast<std::size_t>(std::max(1.0, std::ceil(rate / (kRanks * steps))));
    const auto tick = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / steps));
    const auto start = Clock::now();
    std::uint64_t sent = 0;
    for (auto at = start; at - start < length; at += tick) {
      std::this_thread::sleep_until(at);
      for (int r = 0; r < kRanks; ++r) {
        sent += send(r, per_batch);
      }
    }
    return sent;
  }

 private:
  std::size_t send(int rank, std::size_t events) {
    kv::EventBatch batch;
    batch.data_parallel_rank = rank;
    streams_[static_cast<std::size_t>(rank)].next(batch, events);
    batch.ts = unix_now();
    const std::string payload = kv::encode(batch);
    const std::string seq = kv::encode_seq(seq_[static_cast<std::size_t>(rank)]++);
    void* s = sockets_[static_cast<std::size_t>(rank)];
    zmq_send(s, "", 0, ZMQ_SNDMORE);
    zmq_send(s, seq.data(), seq.size(), ZMQ_SNDMORE);
    zmq_send(s, payload.data(), payload.size(), 0);
    return events;
  }

  void* context_;
  std::vector<void*> sockets_;
  std::vector<kv_stream::Stream> streams_;
  std::vector<std::int64_t> seq_ = std::vector<std::int64_t>(kRanks, 0);
};

std::string write_config(const std::filesystem::path& dir, int sim_port, int first_pub_port) {
  std::filesystem::create_directories(dir);
  const auto path = dir / "warden.yaml";
  std::ofstream(path) << "metrics: { scrape_interval: 1s }\nmodels:\n  - name: bench\n    served_model_name: "
                      << kServed
                      << "\n    max_num_seqs: 512\n    replicas: { data_parallel: { url: http://127.0.0.1:"
                      << sim_port << ", size: " << kRanks
                      << " } }\n    kv_events: { endpoint: tcp://127.0.0.1:" << first_pub_port
                      << ", stale_after: 1h }\n";
  return path.string();
}

std::string metrics_text(int port) {
  warden::net::SyncClient c("127.0.0.1", static_cast<std::uint16_t>(port));
  auto r = c.get("/metrics");
  return r && r->status == 200 ? r->body : std::string();
}

// The sum over replicas of each series of `name` by its `le` label ("" for series without one).
std::map<std::string, double> series(const std::string& text, const std::string& name) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "{", 0) != 0) {
      continue;
    }
    const auto le = line.find("le=\"");
    const std::string key =
        le == std::string::npos ? "" : line.substr(le + 4, line.find('"', le + 4) - le - 4);
    out[key] += std::atof(line.c_str() + line.rfind(' ') + 1);
  }
  return out;
}

double sum_of(const std::string& text, const std::string& name) {
  return series(text, name)[""];
}

// The lag's buckets as (upper bound, cumulative count), "+Inf" last.
using Buckets = std::vector<std::pair<double, double>>;

Buckets buckets(const std::string& text) {
  Buckets out;
  for (const auto& [le, n] : series(text, "lm_warden_kv_lag_seconds_bucket")) {
    out.emplace_back(le == "+Inf" ? INFINITY : std::atof(le.c_str()), n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Prometheus' histogram_quantile over the difference of two scrapes: linear within the bucket.
double quantile(const Buckets& before, const Buckets& after, double q) {
  const double total = after.back().second - before.back().second;
  double lower = 0;
  double below = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    const double n = after[i].second - before[i].second;
    if (n >= q * total) {
      if (std::isinf(after[i].first)) {
        return lower;
      }
      return lower + (after[i].first - lower) * (q * total - below) / std::max(1.0, n - below);
    }
    lower = after[i].first;
    below = n;
  }
  return lower;
}

double share_within(const Buckets& before, const Buckets& after, double bound) {
  const double total = after.back().second - before.back().second;
  for (std::size_t i = 0; i < after.size(); ++i) {
    if (after[i].first == bound) {
      return total > 0 ? (after[i].second - before[i].second) / total : 0;
    }
  }
  return 0;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

std::string chat_body(int i) {
  return R"({"model":"bench","max_tokens":4,"stream":true,"messages":[)"
         R"({"role":"system","content":"You are a coding agent."},{"role":"user","content":"question )" +
         std::to_string(i % 64) + R"("}]})";
}

// Small chat requests one after another, until `n` are done or `stop` is set; milliseconds each.
std::vector<double> requests(int port, int n, const std::atomic<bool>& stop) {
  warden::net::SyncClient client("127.0.0.1", static_cast<std::uint16_t>(port));
  std::vector<double> out;
  for (int i = 0; (n == 0 || i < n) && !stop.load(); ++i) {
    const auto start = Clock::now();
    auto r = client.post("/v1/chat/completions", chat_body(i),
                         {{"X-Warden-Session", "s-" + std::to_string(i % 64)}});
    if (!r || r->status != 200) {
      throw std::runtime_error("a request through the warden failed");
    }
    out.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const auto tmp = std::filesystem::temp_directory_path() / ("warden-kv-flood-" + std::to_string(::getpid()));
  const auto pub_port = warden::supervisor::free_port_run(kRanks);
  if (!pub_port) {
    std::fprintf(stderr, "no %d free ports in a row\n", kRanks);
    return 1;
  }
  try {
    Publishers pubs(*pub_port);
    ChildProcess sim({WARDEN_BINARY, "sim", "--port", "0", "--data-parallel-size", std::to_string(kRanks),
                      "--preset", "instant", "--max-num-seqs", "512", "--served-model-name", kServed,
                      "--log-level", "warn"});
    const int sim_port = sim.wait_for_port();
    ChildProcess warden({WARDEN_BINARY, "serve", "--config", write_config(tmp, sim_port, *pub_port),
                         "--listen", "127.0.0.1:0", "--state-dir", (tmp / "state").string(), "--log-level",
                         "warn"});
    const int port = warden.wait_for_port();
    if (!test_support::wait_until(
            [&] { return sum_of(metrics_text(port), "lm_warden_kv_publisher_connected") == kRanks; }, 10s)) {
      throw std::runtime_error("the warden did not connect to the publishers");
    }
    std::this_thread::sleep_for(300ms);  // the subscriptions reach the publishers
    pubs.run(o.rate, o.steps, 2s);       // seeds the indexes: every replica exact
    std::this_thread::sleep_for(500ms);

    std::atomic<bool> stop{false};
    const std::vector<double> idle = requests(port, o.idle_requests, stop);
    const std::string before = metrics_text(port);
    std::uint64_t sent = 0;
    std::thread flood([&] {
      sent = pubs.run(o.rate, o.steps, std::chrono::seconds(o.seconds));
      stop = true;
    });
    const std::vector<double> busy = requests(port, 0, stop);
    flood.join();
    std::this_thread::sleep_for(500ms);  // the last batches applied
    const std::string after = metrics_text(port);

    const Buckets b0 = buckets(before);
    const Buckets b1 = buckets(after);
    const double batches =
        sum_of(after, "lm_warden_kv_batches_total") - sum_of(before, "lm_warden_kv_batches_total");
    const double events =
        sum_of(after, "lm_warden_kv_events_total") - sum_of(before, "lm_warden_kv_events_total");
    std::printf(
        "\nKV events flood: %.0f events/s offered over %d ranks (%d batches/s each) for %d s: %.0f events "
        "sent, %.0f applied in %.0f batches; gaps %.0f, replicas exact %.0f of %d\n",
        o.rate, kRanks, o.steps, o.seconds, static_cast<double>(sent), events, batches,
        sum_of(after, "lm_warden_kv_gaps_total"), sum_of(after, "lm_warden_kv_exact"), kRanks);
    std::printf(
        "event-to-index lag: p50 %.3f ms, p99 %.3f ms, %.2f%% within 1 ms (lm_warden_kv_lag_seconds)\n",
        quantile(b0, b1, 0.5) * 1e3, quantile(b0, b1, 0.99) * 1e3, share_within(b0, b1, 0.001) * 100);
    const double p50_idle = percentile(idle, 0.5);
    const double p50_busy = percentile(busy, 0.5);
    std::printf(
        "small chat request through the warden: idle p50 %.3f ms p99 %.3f ms (%zu), during the flood "
        "p50 %.3f ms p99 %.3f ms (%zu): p50 ratio %.2fx\n",
        p50_idle, percentile(idle, 0.99), idle.size(), p50_busy, percentile(busy, 0.99), busy.size(),
        p50_idle > 0 ? p50_busy / p50_idle : 0.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::filesystem::remove_all(tmp);
    return 1;
  }
  std::filesystem::remove_all(tmp);
  return 0;
}
