// Live state of one configured model: its Router (routing core), its admission queue, and what the poller
// learned about each replica (health, engine metrics, prefix-cache counters since the warden started). The
// poller feeds scrapes in with apply_scrape()/url_failed(); the proxy reads metrics() for every routing
// decision. No sockets here: time is a parameter, so the health and hit-rate rules are unit-tested
// directly (the queue's timer runs on the executor it is given). Not thread-safe: owned by the gateway's
// I/O thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/outlier.hpp"
#include "core/replica_remap.hpp"
#include "core/replica_report.hpp"
#include "core/rng.hpp"
#include "core/router.hpp"
#include "gateway/config/config.hpp"
#include "gateway/runtime/admission_queue.hpp"
#include "gateway/runtime/home_table.hpp"
#include "gateway/runtime/kv_feed.hpp"
#include "gateway/runtime/prefix_watch.hpp"
#include "gateway/runtime/replica_outliers.hpp"
#include "gateway/runtime/replica_runtime.hpp"
#include "protocol/prometheus.hpp"

namespace warden::gateway {

// What identifies replica `index` of `config` across a reload: its URL, and its rank in data-parallel
// mode.
std::string replica_identity(const ModelConfig& config, int index);

class ModelRuntime {
 public:
  // Keeps its own copy of `config` (a reload changes it through update_entry() and relay()). The admission
  // queue's timer runs on `io`; held requests are routed again with `rng` (the gateway's one generator).
  ModelRuntime(const ModelConfig& config, int unhealthy_after, boost::asio::any_io_executor io,
               core::SplitMixRng& rng);
  ModelRuntime(const ModelRuntime&) = delete;
  ModelRuntime& operator=(const ModelRuntime&) = delete;

  const ModelConfig& config() const { return config_; }
  // The Router, to read (its routing, homes, counters); it changes only through the runtime's operations.
  const core::Router& router() const { return router_; }
  // The conversation homes, as the stores and the other wardens restore, learn and share them.
  HomeTable homes() { return HomeTable(router_); }
  // The one way a model's routing changes (the file at start or reload, a stored change, the admin API):
  // the Router takes it, the admission queue's bounds follow, and the requests it holds are routed again
  // under the new rules. False (nothing changed) for a policy the core does not know.
  bool set_routing(const core::RoutingConfig& routing);
  // The requests admission holds for this model (route `queued`).
  AdmissionQueue& queue() { return queue_; }
  const AdmissionQueue& queue() const { return queue_; }
  // Room may have freed (a request finished, a scrape arrived, the replica list changed): the held
  // requests are routed again from the head.
  void retry_queued();
  // The routing in force (a copy).
  core::RoutingConfig routing() const { return router_.routing_config(); }
  // The Router's counters, homes and admission state at `now` (a copy, for the card and the metrics).
  core::RouterView view(core::Time now) { return router_.view(now); }
  // Routes one request over the replicas as they are now (metrics()), `avoid` read as unhealthy (a retry
  // does not go back to the replica that failed). Counted: its replica counts it in flight until finish();
  // uncounted (it generates nothing): nothing is counted or remembered.
  core::Decision route(const core::RequestFacts& facts, std::optional<int> avoid, bool counted,
                       core::Rng& rng, core::Time now = std::chrono::steady_clock::now().time_since_epoch());
  // A request routed by `decision` has its first token (or ended without one): its prefill is done.
  void first_token(const core::Decision& decision);
  // A counted request on `replica` ended (however it ended): room may have freed for the held requests.
  void finish(int replica);
  // A request routed by `decision` never reached its replica and is routed again (core::Router::abandon).
  void abandon(const core::Decision& decision) { router_.abandon(decision); }
  // The engine's reply to a routed request of `facts` ended, with its final text or not.
  void answered(const core::RequestFacts& facts, bool final_text) { router_.answered(facts, final_text); }
  // Its client left a request of `facts` before any answer (core::Router::left_unanswered).
  void left_unanswered(const core::RequestFacts& facts) { router_.left_unanswered(facts); }
  // What the warden knows of each replica, to read: it changes through the operations below.
  const std::vector<ReplicaRuntime>& replicas() const { return replicas_; }
  // One entry per replica, as core::Router::route() wants them: an ejected replica reads as unhealthy,
  // unless so few are left that every replica answering its scrapes takes requests (core::panic()).
  const std::vector<core::ReplicaMetrics>& metrics(
      core::Time now = std::chrono::steady_clock::now().time_since_epoch());

  // Outlier ejection of the replicas with the rules in force (configured at start and at every reload): a
  // class of its own, with its own door.
  ReplicaOutliers& outliers() { return outliers_; }
  const ReplicaOutliers& outliers() const { return outliers_; }

  // A successful scrape of `url` (one body, already parsed for this model's served name). Updates every
  // replica served by that URL; in DP mode rank r is the series with engine="r".
  // Returns true if a replica was unhealthy and is healthy again.
  // `now` (steady clock) times the prefill rate measured from the engines' counters.
  bool apply_scrape(const UpstreamUrl& url, const protocol::VllmScrape& scrape,
                    core::Time now = std::chrono::steady_clock::now().time_since_epoch());
  // A failed scrape or a failed connect to `url`: after `unhealthy_after` in a row its replicas are
  // marked unhealthy. A replica recovers on its next successful scrape. Returns true if a replica just
  // became unhealthy.
  bool url_failed(const UpstreamUrl& url, const std::string& why);
  // The same for one replica only (a proxied request could not reach it).
  bool replica_failed(int replica, const std::string& why);
  // The engine behind `replicas` (launched by the warden) is up, or down for `why`: up, each takes
  // requests again with what its old engine failed forgotten; down, none until its engine is up again
  // or a scrape succeeds.
  void engine(const std::vector<int>& replicas, bool up, const std::string& why);
  // Every replica takes no request until its first successful scrape (an engine starting, a model added
  // by a reload); `why` is its last error meanwhile.
  void unscraped(const std::string& why);
  // The other wardens' load on `replica` (gateway/shared/, every second).
  void set_peer_load(int replica, std::uint32_t in_flight, std::uint32_t conversations,
                     std::uint64_t held_tokens, std::uint32_t wardens);
  // `replica`'s KV cache events, as the subscriber feeds them (nullptr out of range).
  KvFeed* kv_feed(int replica);
  // A request of the thread its decision names (core::Decision::thread_key, thread_anew) goes to `replica`
  // (KvFeed::sent).
  void sent(int replica, const core::Decision& decision) {
    if (replica >= 0 && static_cast<std::size_t>(replica) < replicas_.size()) {
      replicas_[static_cast<std::size_t>(replica)].kv.sent(decision.thread_key, decision.thread_anew);
    }
  }
  // A reloaded file's entry for this model: names, routing and request rewriting (not its replicas).
  void update_entry(const ModelConfig& next);
  // A reloaded file's replica list (URLs, data-parallel URL and size): each replica that remains keeps
  // its state, health and conversations wherever it now is (matched by URL, core/replica_remap.hpp), a
  // new one is unhealthy until its first scrape, a removed one is forgotten. Returns the remap.
  core::ReplicaRemap relay(const ModelConfig& next);
  // How many times relay() changed the replica list: a request routed at layout() `since` finds its
  // replica's index now through follow() (nullopt: its replica was removed).
  std::uint64_t layout() const { return remaps_.size(); }
  std::optional<int> follow(int replica, std::uint64_t since) const;
  // Replicas of this model served by `url`.
  std::vector<int> replicas_of(const UpstreamUrl& url) const;

  // The context length `url` reported in /v1/models (nullopt: it reports none).
  void set_max_model_len(const UpstreamUrl& url, std::optional<std::int64_t> value);
  // The model's context length: the smallest its URLs reported, nullopt if none did.
  std::optional<std::int64_t> max_model_len() const;

  // Conversations whose prompt start changed between turns.
  PrefixWatch& prefix_watch() { return prefix_watch_; }
  const PrefixWatch& prefix_watch() const { return prefix_watch_; }

 private:
  void apply_rank(int replica, const protocol::VllmRank& rank, std::uint64_t backlog, core::Time now);

  ModelConfig config_;
  int unhealthy_after_;
  std::vector<core::ReplicaRemap> remaps_;  // every relay() that changed the list, oldest first
  core::Router router_;
  std::vector<ReplicaRuntime> replicas_;
  ReplicaOutliers outliers_;
  std::vector<core::ReplicaMetrics> metrics_;
  std::vector<std::pair<std::string, std::int64_t>> max_model_len_;  // per URL text
  PrefixWatch prefix_watch_;
  core::SplitMixRng& rng_;
  AdmissionQueue queue_;  // last: its route-again function reads the members above
};

// The runtimes of the models served, in the order of the configuration.
using ModelRuntimes = std::vector<std::unique_ptr<ModelRuntime>>;

// The vLLM series of one model in a /metrics body. Series are matched on their model_name label; if none
// matches (an engine started without --served-model-name), every series counts. vllm:cache_config_info
// carries no model_name label in vLLM, so block_size/num_gpu_blocks are taken per engine regardless.
protocol::Result<protocol::VllmScrape> scrape_for_model(std::string_view body,
                                                        std::string_view served_model_name);

}  // namespace warden::gateway
