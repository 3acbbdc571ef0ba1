// The Redis client of the shared state (several wardens in front of the same replicas, docs/deployment.md).
// One thread of its own runs hiredis' blocking API with connect and command timeouts; the gateway's I/O
// thread hands it pipelines of commands and either waits for the answer at most `lookup_timeout` (ask) or
// not at all (send). Redis slow or down never blocks the I/O thread: while it is down, ask() answers at
// once and send() drops its commands (the gateway publishes everything again when Redis is back).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include "base/result.hpp"
#include "gateway/config/config.hpp"
#include "gateway/shared/shared_keys.hpp"

#include "net/http.hpp"

struct redisContext;

namespace warden::gateway {

// One Redis reply, copied out of hiredis.
struct RedisReply {
  enum class Type { nil, string, integer, array, status, error };
  Type type = Type::nil;
  std::string text;  // string, status and error replies
  long long integer = 0;
  std::vector<RedisReply> elements;

  bool nil() const { return type == Type::nil; }
};

using RedisReplies = std::vector<RedisReply>;
// Runs on the I/O thread; nullopt when the commands could not be sent or answered.
using RedisDone = std::function<void(std::optional<RedisReplies>)>;

class SharedState {
 public:
  // Latency histogram upper bounds in seconds (a loopback round trip is ~0.1 ms; the bound a few ms).
  static constexpr std::array<double, 9> kLatencyBuckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                         0.005,  0.01,    0.025,  0.05};

  SharedState(net::asio::any_io_executor io, SharedStateConfig config, std::string warden_id);
  ~SharedState();
  SharedState(const SharedState&) = delete;
  SharedState& operator=(const SharedState&) = delete;

  // Starts the thread. `on_up` runs on the I/O thread each time Redis becomes reachable (at start too).
  void start(std::function<void()> on_up);
  // Sends what is queued, then ends the thread. Idempotent.
  void stop();

  bool up() const { return up_.load(); }
  const SharedStateConfig& config() const { return config_; }
  const std::string& warden_id() const { return warden_id_; }

  using Clock = std::chrono::steady_clock;
  // The replies to `commands` (one pipeline) within lookup_timeout; nullopt when Redis is down, failed or
  // was slower. `op` labels the latency histogram ("claim", "rehome").
  net::asio::awaitable<std::optional<RedisReplies>> ask(std::vector<RedisCommand> commands, std::string op);
  // One of several tries that together wait at most until `deadline` (counted once by the caller, with
  // observe()): the replies, and "ok", "error", "timeout" or "down".
  struct Answer {
    std::optional<RedisReplies> replies;
    const char* result = "down";
  };
  net::asio::awaitable<Answer> attempt(std::vector<RedisCommand> commands, Clock::time_point deadline);
  // Counts one request's outcome and latency (lm_warden_shared_state_*): ask() does it itself.
  void observe(const std::string& op, const std::string& result, Clock::duration took);
  // ask() in the background: nothing waits; `done` (if any) gets the replies on the I/O thread.
  // `urgent` goes ahead of the other background writes (a lock another warden may be waiting for).
  void send(std::vector<RedisCommand> commands, RedisDone done = {}, bool urgent = false);
  // An urgent send() for later, safe to call after this object is stopped or destroyed (then it drops
  // the commands): for a destructor that may run after the gateway's.
  using Sender = std::function<void(std::vector<RedisCommand>)>;
  Sender sender() {
    return [this, alive = alive_](std::vector<RedisCommand> commands) {
      if (*alive) {
        send(std::move(commands), {}, true);
      }
    };
  }

  // The gateway republished its homes after Redis came back.
  void resynced() { ++resyncs_; }
  // lm_warden_shared_state_* in Prometheus' text format.
  std::string render_metrics() const;

 private:
  struct Job {
    std::vector<RedisCommand> commands;
    Clock::time_point deadline;  // an answer later than this is of no use: not even sent
    std::function<void(std::optional<RedisReplies>)> done;  // called on the Redis thread
  };
  struct Histogram {
    std::array<std::uint64_t, kLatencyBuckets.size()> counts{};
    double sum = 0;
    std::uint64_t count = 0;
  };

  // Urgent jobs (a request waits for them) go ahead of background writes.
  void enqueue(Job job, bool urgent);
  void run();
  base::Result<void> connect();
  base::Result<RedisReplies> execute(const std::vector<RedisCommand>& commands);
  void set_up(bool up, const std::string& why);
  void fail_queued();

  net::asio::any_io_executor io_;
  SharedStateConfig config_;
  std::string warden_id_;
  std::function<void()> on_up_;
  std::atomic<bool> up_{false};
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<std::uint64_t> transitions_{0};
  std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
  // I/O thread only.
  std::map<std::pair<std::string, std::string>, std::uint64_t> asks_;  // op, result
  std::map<std::string, Histogram> latency_;
  std::uint64_t resyncs_ = 0;
  // Shared with the Redis thread.
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  // The Redis thread only.
  redisContext* ctx_ = nullptr;
  bool worker_up_ = false;
  bool started_ = false;
  std::thread thread_;
};

}  // namespace warden::gateway
