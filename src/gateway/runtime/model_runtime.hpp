// Live state of one configured model: its Router (routing core), its admission queue, and what the warden
// knows of each replica (ReplicaSet: health, engine figures, KV cache event feeds, outlier ejection). The
// poller feeds scrapes in with apply_scrape() and the replica set's failed(); a request is routed, held and
// ended through route(), queue(), finish(). No sockets here: time is a parameter, so the health and
// hit-rate rules are unit-tested directly (the queue's timer runs on the executor it is given). Not
// thread-safe: owned by the gateway's I/O thread.
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
#include "gateway/runtime/prefix_watch.hpp"
#include "gateway/runtime/replica_set.hpp"
#include "protocol/prometheus.hpp"

namespace warden::gateway {

// What identifies replica `index` of `config` across a reload: its URL, and its rank in data-parallel
// mode.
std::string replica_identity(const ModelConfig& config, int index);

// Replicas of `config` served by `url`.
std::vector<int> replicas_of(const ModelConfig& config, const UpstreamUrl& url);

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
  // Routes one request over the replicas as they are now (ReplicaSet::metrics()), `avoid` read as unhealthy
  // (a retry does not go back to the replica that failed). Counted: its replica counts it in flight until
  // finish(); uncounted (it generates nothing): nothing is counted or remembered.
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
  // What the warden knows of each replica (a class of its own, with its own door: the senses' operations,
  // outlier ejection, and what the Router reads of them). Its replica list changes only through relay().
  ReplicaSet& replica_set() { return replica_set_; }
  const ReplicaSet& replica_set() const { return replica_set_; }

  // A successful scrape of `url` (one body, already parsed for this model's served name): every replica
  // served by that URL takes its figures, with the prefill backlog the Router counts on it
  // (ReplicaSet::apply_scrape). True if a replica was unhealthy and is healthy again. `now` (steady
  // clock) times the prefill rate measured from the engines' counters.
  bool apply_scrape(const UpstreamUrl& url, const protocol::VllmScrape& scrape,
                    core::Time now = std::chrono::steady_clock::now().time_since_epoch());
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

  // The context length `url` reported in /v1/models (nullopt: it reports none).
  void set_max_model_len(const UpstreamUrl& url, std::optional<std::int64_t> value);
  // The model's context length: the smallest its URLs reported, nullopt if none did.
  std::optional<std::int64_t> max_model_len() const;

  // Conversations whose prompt start changed between turns.
  PrefixWatch& prefix_watch() { return prefix_watch_; }
  const PrefixWatch& prefix_watch() const { return prefix_watch_; }

 private:
  ModelConfig config_;
  std::vector<core::ReplicaRemap> remaps_;  // every relay() that changed the list, oldest first
  core::Router router_;
  ReplicaSet replica_set_;
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
