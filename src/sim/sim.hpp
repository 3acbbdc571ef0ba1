#pragma once
// `lm-warden sim`: a vLLM-compatible server over N simulated engine ranks (engine::Engine).
//
// Time: model time = wall time since start x time_scale. Each rank is advanced by a coroutine that runs
// engine.step(t) and delivers the step's events when the wall clock reaches the step's end (scaled); it
// never runs ahead of model time. While a rank is busy its steps are back to back in model time; if the
// host cannot keep up the rank lags (lag = scaled wall clock - end of the last step, exposed as
// warden_sim_lag_seconds). An idle rank's clock jumps to "now" when work arrives.
//
// Routing: `X-data-parallel-rank: r` pins (non-integer ignored, out of range → 400); otherwise one of
// `api_server_count` API servers of vLLM's balancer (core/vllm_balancer.hpp, `vllm_balancer` = current or
// legacy vLLM, views published every `lb_refresh_interval`), chosen per connection at random (seeded),
// picks the rank.

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/result.hpp"
#include "core/types.hpp"
#include "engine/config.hpp"
#include "net/server.hpp"
#include "sim/kv_events_config.hpp"

namespace warden::sim {

struct SimOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;
  int data_parallel_size = 1;
  engine::EngineConfig engine;  // per rank
  double time_scale = 1.0;      // model seconds per wall second
  std::string served_model_name = "Qwen/Qwen3-4B-Instruct-2507";
  std::uint64_t seed = 0;
  int api_server_count = 0;  // 0 = data_parallel_size (vLLM's default)
  std::size_t max_body_bytes = 32u << 20;
  double lb_refresh_interval = 0.1;  // model seconds between balancer view refreshes
  core::VllmBalancerModel vllm_balancer = core::VllmBalancerModel::current;  // which vLLM it balances like
  // HTTPS as `vllm serve --ssl-certfile --ssl-keyfile`: both PEM files, or neither (plain HTTP).
  std::string ssl_certfile;
  std::string ssl_keyfile;
  // `--kv-events-config`: each rank publishes its KV cache events over ZMQ (sim/kv_publisher.hpp).
  KvEventsConfig kv_events;
};

class Sim {
 public:
  Sim(boost::asio::io_context& ioc, SimOptions opts);
  ~Sim();
  Sim(const Sim&) = delete;
  Sim& operator=(const Sim&) = delete;

  /// The HTTP handler serving every endpoint.
  net::Handler handler();
  /// Starts the rank steppers (call once, before serving).
  void start();
  /// Opens the KV cache event publishers when the options enable them (before start()); why not.
  base::Result<void> open_kv_events();
  /// Stops the steppers and the KV event publishers; pending requests are cancelled by the server's stop().
  void stop();

  /// Model seconds since start.
  double model_now() const;
  /// The Prometheus exposition served at /metrics.
  std::string metrics_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Runs the simulator until SIGINT/SIGTERM (prints "listening on http://HOST:PORT"); returns the exit code.
int run_sim(const SimOptions& opts);

}  // namespace warden::sim
