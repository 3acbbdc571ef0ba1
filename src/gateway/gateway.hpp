// `lm-warden serve`: the gateway. One object owns the configuration, one ModelRuntime per model (routing
// core + replica state), the upstream connection pool, the metrics poller, the stats store and the
// warden's own metrics, and answers every HTTP request through handle(). Runs on one io_context thread
// (see net/server.hpp), so none of its state needs locks.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "gateway/config.hpp"
#include "gateway/model_runtime.hpp"
#include "gateway/request_record.hpp"
#include "gateway/stats_store.hpp"
#include "gateway/warden_metrics.hpp"
#include "net/client.hpp"
#include "net/server.hpp"
#include "supervisor/launcher.hpp"

namespace warden::gateway {

class Gateway {
 public:
  Gateway(net::asio::io_context& ioc, Config config);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Opens the stats history (state_dir) and starts the poller and the periodic stats flush.
  // Returns false (with `error` set) if the state directory cannot be used.
  bool start(std::string* error);
  // Stops the background loops and writes the stats history. Idempotent.
  void stop();

  // The net::Server handler.
  net::asio::awaitable<net::Reply> handle(net::Request& req, const net::ConnectionInfo& conn);
  net::ServerOptions server_options() const;

  const Config& config() const { return config_; }

 private:
  struct Upstream;  // one distinct engine URL: scraped once per interval
  struct Exchange;  // one proxied request, finished exactly once
  struct Admin;     // the admin API's route table and endpoints (admin_routes.cpp)

  net::asio::awaitable<net::Reply> proxy(net::Request& req);
  net::asio::awaitable<net::Reply> admin(net::Request& req);
  net::asio::awaitable<void> poll_loop(std::shared_ptr<Upstream> up);
  net::asio::awaitable<void> flush_loop();
  void finish_request(RequestRecord& record);
  std::vector<ReplicaGauges> replica_gauges();
  ModelRuntime* find_model(std::string_view name);
  net::ClientTimeouts client_timeouts() const;
  std::int64_t unix_now() const;

  net::asio::io_context& ioc_;
  supervisor::Launcher launcher_{ioc_.get_executor()};  // engines of models with a launch: section
  Config config_;
  std::int64_t started_unix_;
  std::vector<std::unique_ptr<ModelRuntime>> models_;
  std::vector<std::shared_ptr<Upstream>> upstreams_;
  net::ClientPool pool_;
  net::ClientPool scrape_pool_;
  core::SplitMixRng rng_;
  StatsStore stats_;
  std::unique_ptr<StatsDb> stats_db_;
  WardenMetrics metrics_;
  std::shared_ptr<bool> alive_;  // background loops stop when this is false
  net::asio::cancellation_signal flush_cancel_;
  bool stopped_ = false;
};

}  // namespace warden::gateway
