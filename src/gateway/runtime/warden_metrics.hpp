// The warden's own Prometheus exposition (`GET /metrics`, names `lm_warden_*`).
// Not thread-safe: owned by the gateway's I/O thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/types.hpp"
#include "gateway/runtime/kv_feed.hpp"
#include "gateway/runtime/request_record.hpp"

namespace warden::gateway {

// A listened-to replica's KV cache events (KvFeed) at render time.
struct KvReplicaGauges {
  KvFeedCounts counts;
  bool exact = false;     // the Router reads its index now
  bool complete = false;  // the index has seen every block the engine holds
  bool connected = false;
  std::uint64_t resident_tokens = 0;  // GPU prefix cache, as the events tell it
  std::size_t index_bytes = 0;
};

// Live per-replica values the gateway supplies at render time (they are owned elsewhere).
struct ReplicaGauges {
  std::string model;
  int replica = 0;
  int in_flight = 0;
  bool healthy = true;
  double running = 0;
  double waiting = 0;
  double kv_used = 0;
  bool ejected = false;  // taken out of routing by outlier ejection (core/outlier.hpp)
  // The working set: this warden's active conversations homed here and their tokens (ReplicaSessions),
  // against the replica's GPU cache and host offload in tokens (0 = unknown or none).
  std::uint32_t conversations = 0;
  std::uint64_t working_set_tokens = 0;
  std::uint64_t kv_capacity_tokens = 0;
  std::uint64_t offload_capacity_tokens = 0;
  std::optional<KvReplicaGauges> kv;  // nullopt: the warden does not listen to its events
};

// Live per-model values, supplied at render time too.
struct ModelGauges {
  std::string model;
  std::uint64_t prefix_breaks = 0;
  std::uint64_t thread_compactions = 0;       // threads the client compacted (PrefixWatch)
  std::uint64_t side_requests = 0;            // requests that belong to no thread
  std::size_t threads = 0;                    // threads besides the sessions' main ones, in the Router
  std::size_t threaded_sessions = 0;          // sessions that have such threads
  std::optional<std::int64_t> max_model_len;  // as the engines report it
  std::size_t queue_length = 0;               // requests admission holds now
  std::size_t queue_task_starts = 0;          // of those, the first requests of agent tasks
  // By class of work (core::WorkClass): held now, let in since the start and the sum of their waits.
  std::array<std::size_t, core::work_class_count> queue_held_by_class{};
  std::array<std::uint64_t, core::work_class_count> queue_let_in_by_class{};
  std::array<double, core::work_class_count> queue_waited_s_by_class{};
  // Held now by tenant (its id as the admin API writes it, `none` for requests that name none), only those
  // holding any: at most admission.max_queue series a model.
  std::vector<std::pair<std::string, std::size_t>> queue_held_by_tenant;
  // The model's working set (gateway/runtime/working_set.hpp, this warden's conversations) and what its
  // healthy replicas hold; the capacities are left out until the engines reported a GPU cache.
  std::uint32_t conversations = 0;
  std::uint64_t working_set_tokens = 0;
  std::uint64_t kv_capacity_tokens = 0;
  std::uint64_t offload_capacity_tokens = 0;
};

class WardenMetrics {
 public:
  // TTFB histogram upper bounds in seconds (long prompts take minutes before the first byte).
  static constexpr std::array<double, 16> kTtfbBuckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                       2.5,   5,    10,    30,   60,  120,  300, 600};

  void request_done(const RequestRecord& r);
  void scrape_error(const std::string& url);
  void scrape_ok(const std::string& url);
  // Admission's queue: a held request routed after `waited_s`, refused (`reason`: full, draining), or
  // whose client left while it waited.
  void queue_admitted(const std::string& model, double waited_s);
  void queue_rejected(const std::string& model, const std::string& reason);
  void queue_abandoned(const std::string& model);
  // Outlier ejection took `replica` of `model` out of routing for `reason` (core::outlier_reason_name).
  void replica_ejected(const std::string& model, int replica, std::string_view reason);
  // A connection to the TLS listener that never became one: "plain_http" or "handshake".
  void tls_failure(std::string_view kind);
  std::string render(const std::vector<ReplicaGauges>& replicas,
                     const std::vector<ModelGauges>& models = {}) const;

 private:
  struct Histogram {
    std::array<std::uint64_t, kTtfbBuckets.size()> counts{};
    double sum = 0;
    std::uint64_t count = 0;
    void observe(double v);
  };
  // model, replica, route, status
  std::map<std::tuple<std::string, std::string, std::string, int>, std::uint64_t> requests_;
  std::map<std::string, Histogram> ttfb_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> prompt_tokens_;  // model, cached|computed
  std::map<std::string, std::uint64_t> completion_tokens_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> stream_breaks_;  // model, cause
  std::map<std::string, std::uint64_t> scrape_errors_;
  std::map<std::string, std::uint64_t> scrapes_;
  std::map<std::string, Histogram> queue_wait_;
  std::map<std::string, std::uint64_t> queue_admitted_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> queue_rejected_;  // model, reason
  std::map<std::string, std::uint64_t> queue_abandoned_;
  std::map<std::tuple<std::string, int, std::string>, std::uint64_t> ejections_;  // model, replica, reason
  std::map<std::string, std::uint64_t> tls_failures_;                             // kind
  void render_queue(std::string& o, const std::vector<ModelGauges>& models) const;
  static void render_threads(std::string& o, const std::vector<ModelGauges>& models);
  static void render_working_set(std::string& o, const std::vector<ModelGauges>& models);
};

// What a replica's feed shows (nullopt: the warden does not listen to it).
std::optional<KvReplicaGauges> kv_gauges(const KvFeed& feed);
// The series of the replicas' KV cache events (kv_metrics.cpp): only replicas the warden listens to.
void render_kv_metrics(std::string& o, const std::vector<ReplicaGauges>& replicas);

// Escapes a Prometheus label value (backslash, double quote, newline).
std::string prometheus_escape(std::string_view v);

}  // namespace warden::gateway
