// The metrics poller: every engine URL the served models use is scraped once per metrics.scrape_interval.
// /metrics goes into each of its models' runtime (ModelRuntime::apply_scrape), after which the progress
// watchdog judges the replicas (ReplicaGuard) and the model's held requests are routed again; the context
// length is asked at /v1/models once the engine answers, and again whenever it comes back. A failed
// scrape counts against the URL's replicas (unhealthy after metrics.unhealthy_after in a row), and the
// requests waiting on a replica marked unhealthy go elsewhere. Runs on the gateway's I/O thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gateway/config/config.hpp"
#include "gateway/runtime/model_set.hpp"
#include "gateway/runtime/replica_guard.hpp"
#include "gateway/runtime/warden_metrics.hpp"
#include "net/client.hpp"

namespace warden::gateway {

class Poller {
 public:
  // `config`'s metrics: section is read at every scrape; the other arguments outlive the poller.
  Poller(net::asio::io_context& ioc, const Config& config, ModelSet& models, ReplicaGuard& guard,
         WardenMetrics& metrics);
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // Starts one poll loop per URL; stop() ends them. Idempotent.
  void start();
  void stop();
  // One scraper per distinct engine URL of the models served, each knowing its models: the ones no model
  // uses any more stop, new ones start polling (once start() has started the others). Once the models
  // are added, and after a reload changed them.
  void sync();
  // Calls `done` once every engine URL has been scraped once, answered or not (at once if that is past).
  void when_scraped(std::function<void()> done);
  // What new connections to the engines are verified with (at start and at every reload).
  void set_tls(std::shared_ptr<net::TlsContext> tls) { pool_.set_tls(std::move(tls)); }

 private:
  struct Upstream;  // one distinct engine URL: scraped once per interval

  net::asio::awaitable<void> poll_loop(std::shared_ptr<Upstream> up);
  // One scrape of `up`, its figures taken by its models: nullopt, or why it failed.
  net::asio::awaitable<std::optional<std::string>> scrape(Upstream& up, const net::ClientTimeouts& t,
                                                          bool& want_models);
  // GET /v1/models of one engine URL: the context length of its models. False if it could not be asked.
  net::asio::awaitable<bool> fetch_models(std::shared_ptr<Upstream> up, net::ClientTimeouts t);
  void spawn(const std::shared_ptr<Upstream>& up);
  void check_scraped();  // calls when_scraped()'s callback once every URL has been scraped

  net::asio::io_context& ioc_;
  const Config& config_;
  ModelSet& models_;
  ReplicaGuard& guard_;
  WardenMetrics& metrics_;
  std::vector<std::shared_ptr<Upstream>> upstreams_;
  net::ClientPool pool_;
  bool polling_ = false;              // start() has started the poll loops
  std::shared_ptr<bool> alive_;       // the poll loops end when this is false
  std::function<void()> on_scraped_;  // when_scraped()
};

}  // namespace warden::gateway
