// `lm-warden serve`: the gateway. One object owns the configuration, one ModelRuntime per model (routing
// core + replica state), the upstream connection pool, the metrics poller, the stats store and the
// warden's own metrics, and answers every HTTP request through handle(). Runs on one io_context thread,
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
#include "gateway/config/config.hpp"
#include "gateway/config/origin_guard.hpp"
#include "gateway/reload/reload_plan.hpp"
#include "gateway/runtime/model_runtime.hpp"
#include "gateway/runtime/request_record.hpp"
#include "gateway/runtime/waiting_requests.hpp"
#include "gateway/runtime/warden_metrics.hpp"
#include "gateway/shared/shared_homes.hpp"
#include "gateway/stores/durable_state.hpp"
#include "gateway/stores/stats_store.hpp"
#include "net/client.hpp"
#include "net/server.hpp"
#include "supervisor/launcher.hpp"

namespace warden::protocol {
class StreamRelay;
struct RequestInfo;
struct RewriteOptions;
}  // namespace warden::protocol

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
  void set_config_loader(std::function<ConfigResult()> load);
  // Calls `done` once every engine URL has been scraped once, answered or not (at once if that is past):
  // from then on routing works from real figures (serve tells systemd it is ready then).
  void when_scraped(std::function<void()> done);
  // The listener's TLS context (null: plain HTTP), loaded by start() and again by every reload, which
  // hands the new one to `use` (the server takes it for new connections).
  std::shared_ptr<net::TlsContext> listener_tls() const {
    return config_.tls ? config_.tls->context : nullptr;
  }
  void on_listener_tls(std::function<void(std::shared_ptr<net::TlsContext>)> use);

 private:
  struct Upstream;    // one distinct engine URL: scraped once per interval
  struct Exchange;    // one proxied request, finished exactly once
  class AdminAccess;  // what the admin API's endpoints see of the gateway (admin/gateway_admin.cpp)
  struct Refusal;     // an error answer for the client
  struct Outgoing;    // what goes to the engine, prepared once for every attempt
  struct Attempt;     // one try at a replica and what came of it
  using StreamBody = std::function<net::asio::awaitable<void>(net::StreamWriter&)>;
  using Clock = std::chrono::steady_clock;

  // The proxy (proxy.cpp): admit → forward (route, send, await the first event; once more elsewhere if
  // the replica failed before answering) → the whole response, or the stream relayed.
  net::asio::awaitable<net::Reply> proxy(net::Request& req);
  std::optional<net::Response> admit(net::Request& req, Exchange& ex, Outgoing& out);
  std::optional<Refusal> fit_output(const Exchange& ex, const protocol::RequestInfo& info,
                                    protocol::RewriteOptions& ro);
  // The request's prompt start, judged per thread (PrefixWatch); sets facts.thread's start and side.
  static void watch_prefix(ModelRuntime& model, const protocol::RequestInfo& info, std::string_view body,
                           core::RequestFacts& facts);
  // False with at.decision.queued(): admission holds the request (hold() waits for its turn).
  bool route(Exchange& ex, const Outgoing& out, int attempt, Attempt& at);
  bool take_decision(Exchange& ex, const Outgoing& out, int attempt, Attempt& at);
  net::asio::awaitable<bool> hold(Exchange& ex, const Outgoing& out, Attempt& at);
  net::asio::awaitable<bool> forward(Exchange& ex, const net::Request& req, const Outgoing& out, int attempt,
                                     Attempt& at);
  // An engine's 400 read: relayed as it is, the client's context error (refuse), or to be sent again
  // with the output cap the engine's figures give (resend); failed: the read broke off.
  enum class Refit { relay, refuse, resend, failed };
  net::asio::awaitable<Refit> refit(Exchange& ex, const net::Request& req, const Outgoing& out, int attempt,
                                    Attempt& at, const UpstreamUrl& url, net::UpstreamResponse& r);
  void attempt_failed(Exchange& ex, const Outgoing& out, int attempt, Attempt& at, const UpstreamUrl& url,
                      const boost::system::error_code& failure, bool broke_off);
  net::asio::awaitable<net::Response> whole_response(Exchange& ex, const net::Request& req,
                                                     const Outgoing& out, Attempt& at);
  static StreamBody relay_body(std::shared_ptr<Exchange> ex, net::UpstreamResponse upstream,
                               bool drop_usage_chunk, net::BodyPiece first, Clock::time_point first_at);
  static net::asio::awaitable<void> relay_stream(std::shared_ptr<Exchange> ex,
                                                 std::shared_ptr<net::UpstreamResponse> up,
                                                 bool drop_usage_chunk, net::BodyPiece first,
                                                 Clock::time_point first_at, net::StreamWriter& w);
  static net::asio::awaitable<void> break_stream(Exchange& ex, const protocol::StreamRelay& relay,
                                                 net::StreamWriter& w);
  static void end_stream(Exchange& ex, net::UpstreamResponse& up, const protocol::StreamRelay& relay, bool ok,
                         bool client_failed, std::optional<Clock::time_point> first_token);
  net::asio::awaitable<net::Reply> admin(net::Request& req);
  net::asio::awaitable<void> poll_loop(std::shared_ptr<Upstream> up);
  void check_scraped();  // calls when_scraped()'s callback once every URL has been scraped
  // GET /v1/models of one engine URL: the context length of its models. False if it could not be asked.
  net::asio::awaitable<bool> fetch_models(std::shared_ptr<Upstream> up, net::ClientTimeouts t);
  net::asio::awaitable<void> flush_loop();
  void finish_request(RequestRecord& record);
  // `replicas` of `m` were just marked unhealthy: the requests waiting for their first byte go elsewhere.
  void recall_waiting(const ModelRuntime& m, const std::vector<int>& replicas, std::string_view why);
  // Outlier ejection (ejection.cpp): a request's outcome on `replica` (a failure, or nullopt: a success),
  // an ejection's consequences, and the progress watchdog after a scrape.
  void request_outcome(ModelRuntime& m, int replica, std::optional<core::OutlierReason> failure);
  void replica_ejected(ModelRuntime& m, int replica, core::Time now);
  void judge_progress(ModelRuntime& m);
  std::vector<ReplicaGauges> replica_gauges();
  std::vector<ModelGauges> model_gauges() const;
  ModelRuntime* find_model(std::string_view name);
  net::ClientTimeouts client_timeouts() const;
  ReloadPlan apply_config(Config next);  // gateway_reload.cpp
  // A model's runtime (its admission queue with it), served from now on (at start, and for a model a
  // reload adds).
  ModelRuntime& add_runtime(const ModelConfig& config);
  // Reloads (gateway_reload.cpp, model_reload.cpp): a model's replica list changed, a model added or
  // removed, and the scrapers that makes needed or idle.
  void apply_models(const ReloadPlan& plan, const Config& next);
  void relay_model(ModelRuntime& m, const ModelConfig& next);
  void add_model(const ModelConfig& config);
  void remove_model(const std::string& name);
  // One scraper per distinct engine URL of the models served, each knowing its models: the ones no model
  // uses any more stop, new ones start polling (once start() has started the others).
  void sync_upstreams();
  std::int64_t unix_now() const;

  net::asio::io_context& ioc_;
  supervisor::Launcher launcher_{ioc_.get_executor()};  // engines of models with a launch: section
  Config config_;
  OriginPolicy browsers_;  // from config_'s allowed_hosts and allowed_origins (a reload sets it again)
  std::int64_t started_unix_;
  std::vector<std::unique_ptr<ModelRuntime>> models_;
  // Models a reload removed (their queues stopped): requests in flight still point at them.
  std::vector<std::unique_ptr<ModelRuntime>> removed_models_;
  bool polling_ = false;      // start() has started the poll loops
  WaitingRequests waiting_;   // requests waiting for a replica's first byte (recall_waiting())
  WaitingRequests relaying_;  // streams relaying from a replica: cut with an error event if it stalls
  std::vector<std::shared_ptr<Upstream>> upstreams_;
  net::ClientPool pool_;
  net::ClientPool scrape_pool_;
  core::SplitMixRng rng_;
  StatsStore stats_;
  DurableState durable_;  // the stats history, conversation homes and routing changes in state_dir
  WardenMetrics metrics_;
  std::unique_ptr<SharedHomes> shared_;  // with `state: { redis: ... }` only
  std::shared_ptr<bool> alive_;          // background loops stop when this is false
  net::asio::cancellation_signal flush_cancel_;
  bool stopped_ = false;
  std::function<ConfigResult()> load_config_;                                  // set_config_loader()
  std::function<void()> on_scraped_;                                           // when_scraped()
  std::function<void(std::shared_ptr<net::TlsContext>)> on_listener_tls_;      // on_listener_tls()
  base::Result<void, std::vector<std::string>> use_tls_files(Config& config);  // gateway_reload.cpp
};

}  // namespace warden::gateway
