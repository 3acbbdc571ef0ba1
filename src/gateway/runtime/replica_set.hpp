// What the warden knows of each replica of one model, and the operations that change it: a scrape's
// figures, a failed scrape or request, a launched engine up or down, the other wardens' load, the KV cache
// event feeds, and outlier ejection (a class of its own, ReplicaOutliers). What the Router reads of them is
// metrics(). Owned by ModelRuntime, which relays it with the replica list; no sockets, time is a parameter.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/replica_remap.hpp"
#include "core/router.hpp"
#include "gateway/runtime/kv_feed.hpp"
#include "gateway/runtime/replica_outliers.hpp"
#include "gateway/runtime/replica_runtime.hpp"
#include "protocol/prometheus.hpp"

namespace warden::gateway {

class ReplicaSet {
 public:
  // `count` replicas, each unhealthy after `unhealthy_after` failures in a row (at least 1).
  ReplicaSet(std::size_t count, int unhealthy_after);

  // What the warden knows of each replica, to read: it changes through the operations below.
  const std::vector<ReplicaRuntime>& replicas() const { return replicas_; }
  // One entry per replica, as core::Router::route() wants them: an ejected replica reads as unhealthy,
  // unless so few are left that every replica answering its scrapes takes requests (core::panic()).
  const std::vector<core::ReplicaMetrics>& metrics(
      core::Time now = std::chrono::steady_clock::now().time_since_epoch());

  // Outlier ejection with the rules in force (configured at start and at every reload).
  ReplicaOutliers& outliers() { return outliers_; }
  const ReplicaOutliers& outliers() const { return outliers_; }

  // A successful scrape of the server of `indices` (`scrape` already parsed for the model's served name;
  // in DP mode rank r is the series with engine="r"), with the warden's prefill backlog on each replica.
  // True if a replica was unhealthy and is healthy again.
  bool apply_scrape(const std::vector<int>& indices, bool data_parallel, const protocol::VllmScrape& scrape,
                    const std::vector<std::uint64_t>& backlog, core::Time now);
  // A failed scrape or connect of the server of `indices`, or a proxied request that could not reach one
  // replica: after `unhealthy_after` in a row a replica is marked unhealthy (true: one just became so). A
  // replica recovers on its next successful scrape.
  bool failed(const std::vector<int>& indices, const std::string& why);
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
  void sent(int replica, const core::Decision& decision);
  // A request on `replica` has its first token: the progress of an engine without token counters.
  void first_token(int replica);
  // A reload relaid the replica list: each replica keeps what is known of it, a new one is unscraped.
  void remap(const core::ReplicaRemap& remap);

 private:
  void apply_rank(int replica, const protocol::VllmRank& rank, std::uint64_t backlog, core::Time now);
  ReplicaRuntime* at(int replica);

  int unhealthy_after_;
  std::vector<ReplicaRuntime> replicas_;
  ReplicaOutliers outliers_;
  std::vector<core::ReplicaMetrics> metrics_;
};

}  // namespace warden::gateway
