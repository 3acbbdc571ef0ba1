// `lm-warden serve`: the gateway, the house its rooms stand in (docs/architecture.md, "The gateway's
// rooms"). It owns the configuration, the models served (ModelSet: one ModelRuntime per model, its routing
// core, replica state and admission queue), the proxy, the poller, the reloader, the stats and the
// warden's own metrics, starts and stops them, and answers every HTTP request through handle(): an
// inference request goes to the proxy, any other to the admin API. Runs on one io_context thread,
// so none of its state (the Routers included) needs locks: docs/architecture.md, "Threads".
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "core/rng.hpp"
#include "gateway/admin/admin_json.hpp"
#include "gateway/admin/page_turns.hpp"
#include "gateway/config/config.hpp"
#include "gateway/config/origin_guard.hpp"
#include "gateway/poller/poller.hpp"
#include "gateway/proxy/proxy.hpp"
#include "gateway/reload/reloader.hpp"
#include "gateway/runtime/model_set.hpp"
#include "gateway/runtime/replica_guard.hpp"
#include "gateway/runtime/warden_metrics.hpp"
#include "gateway/shared/shared_homes.hpp"
#include "gateway/stores/durable_state.hpp"
#include "gateway/stores/stats_store.hpp"
#include "gateway/subscriber/subscriber.hpp"
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
  // Fails if the state directory cannot be used.
  base::Result<void> start();
  // Stops the background loops and writes the stats history and the routing state. Idempotent.
  void stop();
  // Writes what changed in the stats history and the routing state (conversation homes) now, and shares
  // the homes with the other wardens. Runs every second and from stop(); may be called at any time, as
  // often as wanted.
  void flush();

  // The net::Server handler.
  net::asio::awaitable<net::Reply> handle(net::Request& req, const net::ConnectionInfo& conn);
  net::ServerOptions server_options();

  const Config& config() const { return config_; }

  // The configuration file read again (SIGHUP, POST /api/reload; docs/config.md, "Reloading"): api keys,
  // tokens, timeouts and the models' routing take effect for new requests, requests in flight keep what
  // they started with, and what only a restart changes is listed. A file with errors changes nothing.
  ReloadOutcome reload();
  // How reload() reads the file: the app's loader applies its command-line overrides (--listen, ...).
  // Without one, config().source is read as it is.
  void set_config_loader(std::function<ConfigResult()> load) { reloader_.set_config_loader(std::move(load)); }
  // Calls `done` once every engine URL has been scraped once, answered or not (at once if that is past):
  // from then on routing works from real figures (serve tells systemd it is ready then).
  void when_scraped(std::function<void()> done) { poller_.when_scraped(std::move(done)); }
  // The listener's TLS context (null: plain HTTP), loaded by start() and again by every reload, which
  // hands the new one to `use` (the server takes it for new connections).
  std::shared_ptr<net::TlsContext> listener_tls() const {
    return config_.tls ? config_.tls->context : nullptr;
  }
  void on_listener_tls(std::function<void(std::shared_ptr<net::TlsContext>)> use) {
    on_listener_tls_ = std::move(use);
  }

 private:
  class AdminAccess;   // what the admin API's endpoints see of the gateway (gateway_admin.cpp)
  class ReloadAccess;  // what a reload changes of it (gateway_reload.cpp)

  net::asio::awaitable<net::Reply> admin(net::Request& req);
  net::asio::awaitable<void> flush_loop();
  // The upstreams' TLS in force (config_.upstream_tls) for the proxy's and the poller's connections.
  void use_upstream_tls();
  std::vector<ReplicaGauges> replica_gauges();
  std::vector<ModelGauges> model_gauges() const;

  net::asio::io_context& ioc_;
  supervisor::Launcher launcher_{ioc_.get_executor()};  // engines of models with a launch: section
  Config config_;
  OriginPolicy browsers_;  // from config_'s allowed_hosts and allowed_origins (a reload sets it again)
  std::int64_t started_unix_;
  core::SplitMixRng rng_;  // the one generator every model's routing draws from
  StatsStore stats_;
  DurableState durable_;  // the stats history, conversation homes and routing changes in state_dir
  WardenMetrics metrics_;
  ModelSet models_;
  ReplicaGuard guard_;  // the requests on a replica gone bad, and outlier ejection
  Proxy proxy_;
  Poller poller_;
  Subscriber subscriber_;  // the replicas' KV cache events
  Reloader reloader_;
  std::unique_ptr<SharedHomes> shared_;  // with `state: { redis: ... }` only
  PageTurns sessions_turns_;             // the admin API's sessions pages, one at a time
  std::shared_ptr<bool> alive_;          // the flush loop stops when this is false
  net::asio::cancellation_signal flush_cancel_;
  bool stopped_ = false;
  std::function<void(std::shared_ptr<net::TlsContext>)> on_listener_tls_;  // on_listener_tls()
};

}  // namespace warden::gateway
