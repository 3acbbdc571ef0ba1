#pragma once
// Per-model routing facade for the gateway and the what-if driver: session table + policy + counters +
// runtime-changeable config. route() = look up home → decide → commit (home, counters, in_flight).
//
// Not thread-safe, and needs not be: the gateway calls it from its one I/O thread, the what-if driver from
// its one thread (docs/architecture.md, "Threads").

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "core/counters.hpp"
#include "core/kv_index.hpp"
#include "core/policy.hpp"
#include "core/replica_metrics.hpp"
#include "core/replica_remap.hpp"
#include "core/residency.hpp"
#include "core/rng.hpp"
#include "core/session_table.hpp"
#include "core/shared_ids.hpp"
#include "core/task_growth.hpp"
#include "core/tasks_under_way.hpp"
#include "core/thread_homes.hpp"
#include "core/types.hpp"

namespace warden::core {

struct RouterConfig {
  RoutingConfig routing{};
  SessionTableConfig sessions{};
};

/// A model's Router configuration: the one way `serve` (from the model's config) and `simulate` (from
/// its options) configure a Router.
[[nodiscard]] RouterConfig router_config(const RoutingConfig& routing,
                                         const SessionTableConfig& sessions = {});

/// Read-only view for the console / admin API / what-if report (a copy).
struct RouterView {
  RoutingConfig routing;
  std::uint32_t spill_threshold = 8;  ///< resolved
  std::string spill_label;            ///< "8 (auto)" or "4"
  std::vector<ReplicaCounters> counters;
  std::vector<ReplicaSessions> sessions;  ///< active conversations / held tokens per replica
  ReplicaCounters totals;
  std::optional<double> sticky_percent;
  std::uint64_t unrouted = 0;
  std::uint64_t queued = 0;        ///< routing attempts held back by admission
  bool admission_holding = false;  ///< admission is holding new conversations (below the low water mark)
  double task_tokens = 0;          ///< Snapshot::task_tokens: an agent task's measured size (0 = none yet)
  std::vector<std::uint32_t> tasks_under_way;         ///< per replica (TasksUnderWay)
  std::vector<std::uint64_t> prefill_backlog_tokens;  ///< per replica, see ReplicaState
  std::size_t live_sessions = 0;
  /// Sessions with threads besides their main one, and those threads (ThreadHomes).
  std::size_t threaded_sessions = 0;
  std::size_t threads = 0;
};

class Router {
 public:
  /// The default configuration (the `affinity` policy): cannot fail.
  Router();
  /// A Router over `config`, or why not: routing.policy is not a registered policy name (policy.hpp).
  static base::Result<Router> make(RouterConfig config);

  /// Routes one request. `facts.home` and `facts.preferred` are ignored (filled from the session table and
  /// the thread homes: a new thread prefers the replicas that hold its siblings or its prompt start). A
  /// side request (facts.thread.side) goes to its session's home and commits nothing but the counters.
  /// `metrics` has one entry per replica (index = replica). On success in_flight is incremented: call
  /// finish(replica) exactly once when the request ends (however it ends). Commit rules: new/failover → home
  /// := chosen; sticky → refresh; spilled → refresh, home kept; pinned → home := pin if the conversation was
  /// new, else kept; balanced → home := chosen (the freshest cache, should affinity be turned back on). A
  /// `queued` decision (admission) commits nothing: the caller holds the request and routes it again, with
  /// facts.queued_for set to the time it has waited, when room may have freed (a finish(), a scrape).
  Decision route(RequestFacts facts, std::span<const ReplicaMetrics> metrics, Time now, Rng& rng);

  /// Routes a request that generates nothing (counting tokens): where the conversation lives, and nothing
  /// counted or remembered (no finish() to call). The pin; else the conversation's home if it is healthy
  /// (`sticky`); else vLLM's balancer over healthy replicas (`balanced`).
  Decision route_uncounted(const RequestFacts& facts, std::span<const ReplicaMetrics> metrics, Time now,
                           Rng& rng);

  /// Every agent task under way ended without its final text: its agents stopped (the what-if driver's
  /// load stops between levels; in `serve` a stopped agent's task ends after the active window instead).
  void agents_stopped() { tasks_.clear(); }

  /// The request routed to `replica` ended (success, error or client disconnect).
  void finish(ReplicaIndex replica);

  /// The engine's reply to a routed request of `facts` ended, with its final text (`final_text`: no tool
  /// call in it) or with tool calls. A subagent's final text ends its thread: the subagent has returned its
  /// result and sends nothing more, so its home no longer counts it as an active conversation (a request
  /// of it later counts it again). A main thread's final text only waits for its person: nothing changes.
  void answered(const RequestFacts& facts, bool final_text);

  /// The client of a routed request of `facts` left before any answer (no first byte): the agent task it
  /// started, if none of that task's requests was ever answered, is no task under way
  /// (TasksUnderWay::left_unanswered). Call it besides finish(), never for a request abandon() took back.
  void left_unanswered(const RequestFacts& facts);

  /// Tasks under way of `tenant` (RequestFacts::tenant): its share used, for the hold queue's turn.
  [[nodiscard]] std::uint32_t tasks_of_tenant(std::uint64_t tenant) const { return tasks_.of_tenant(tenant); }
  /// The class of work and tenant of `session`'s task under way, if it has one.
  [[nodiscard]] std::optional<TasksUnderWay::TaskOwner> task_owner(std::uint64_t session) const {
    return tasks_.owner(session);
  }

  /// The request of `decision` got its first token (or ended without one): its prefill_tokens leave the
  /// replica's prefill backlog. Call at most once per routed request, before or with finish().
  void first_token(const Decision& decision);

  /// The request of `decision` never reached its replica and will be routed again: finish() it, take its
  /// prefill out of the backlog (no first_token() then) and take back its route count, so a retried
  /// request counts once (as its final route).
  void abandon(const Decision& decision);

  /// A reload relaid the model's replicas (core/replica_remap.hpp; router_remap.cpp): homes, counters and
  /// per-replica state follow their replica, a removed replica's conversations fail over at their next
  /// turn. A request routed before it finishes through the index its replica has now, or not at all if
  /// its replica is gone (the gateway keeps that translation).
  void remap_replicas(const ReplicaRemap& remap);

  /// Runtime configuration (admin API, a restored change): the whole routing at once, max_num_seqs 0 read
  /// as 1. False for an unknown policy name (nothing changes then).
  bool set_routing(RoutingConfig routing);
  void set_session_config(const SessionTableConfig& config);
  [[nodiscard]] RoutingConfig routing_config() const;

  /// The snapshot route() would decide over right now (for logs, tests, the what-if trace).
  [[nodiscard]] Snapshot snapshot(std::span<const ReplicaMetrics> metrics, Time now);

  [[nodiscard]] RouterView view(Time now);

  /// The home the table holds for a session key (nullopt if unknown or expired).
  [[nodiscard]] std::optional<ReplicaIndex> home_of(std::uint64_t session_hash, Time now) const;

  /// The session table's state for a caller that keeps it across restarts (SessionTable's export/import,
  /// track_changes and take_changes).
  [[nodiscard]] std::vector<SessionRecord> export_sessions(Time now) const;
  void import_sessions(std::span<const SessionRecord> entries, Time now);
  /// A conversation another warden placed, found before its first request here: its home unless this
  /// table knows the conversation already (SessionTable::learn, O(1)).
  void learn_home(std::uint64_t session_hash, ReplicaIndex home, std::uint32_t prompt_tokens, Time now);
  /// Another warden had the conversation's latest turn (SessionTable::seen_elsewhere).
  bool seen_elsewhere(std::uint64_t session_hash, ReplicaIndex home, std::uint64_t computed_at, Time now);
  /// Makes `home` the conversation's home whatever the table held (another warden placed it first).
  void adopt_home(std::uint64_t session_hash, ReplicaIndex home, std::uint32_t prompt_tokens, Time now);
  void track_session_changes(bool on);
  [[nodiscard]] SessionChanges take_session_changes();
  [[nodiscard]] SessionTableConfig session_config() const;
  /// Up to `limit` sessions with threads besides their main one, most recently seen first, after the first
  /// `offset` of them.
  [[nodiscard]] std::vector<SessionThreadsView> threaded_sessions(std::size_t limit, Time now,
                                                                  std::size_t offset = 0) const;

 private:
  Router(RouterConfig config, std::unique_ptr<Policy> policy);
  void build_snapshot(std::span<const ReplicaMetrics> metrics, Time now);
  // Snapshot::task_growth and, under TaskAdmission::packing growth or remaining, each replica's
  // tasks_reach_tokens.
  void note_reach();
  void commit(const RequestFacts& facts, const Decision& decision, std::span<const ReplicaMetrics> metrics,
              Time now);
  // Tokens computed at `entry`'s home since its last turn there (RequestFacts::home_computed_since).
  static std::optional<std::uint64_t> computed_since(const SessionEntry& entry,
                                                     std::span<const ReplicaMetrics> metrics);
  void note_admission(const RequestFacts& facts, const Decision& decision);
  // How long an interactive task that ended keeps its room (TaskAdmission::interactive_room; 0 with task
  // admission off).
  [[nodiscard]] Time kept_room() const {
    return routing_.task_admission.enabled ? routing_.task_admission.interactive_room : Time{0};
  }
  // The request's facts with its conversation's key (a shared id's main thread: shared_ids.hpp), noting
  // what the request shows at `note_at` (a request being routed, not one answered); the warden's policy only.
  RequestFacts conversation_facts(RequestFacts facts, std::optional<Time> note_at);
  void drop_prefill(const Decision& decision);
  void look_up_home(RequestFacts& facts, std::span<const ReplicaMetrics> metrics, Time now) const;

  RoutingConfig routing_;
  SessionTable sessions_;
  ThreadHomes threads_;
  ModelCounters counters_;
  std::unique_ptr<Policy> policy_;
  // Reused across calls so route() does not allocate.
  Snapshot snapshot_;
  std::vector<std::uint32_t> sent_since_scrape_;
  std::vector<std::uint64_t> scrape_generation_;
  std::vector<std::uint64_t> prefill_backlog_;
  // Admission hysteresis: set when a new conversation is held, cleared when one is admitted with room.
  bool admission_holding_ = false;
  // Snapshot::task_tokens: the running mean of the last prompt of the agent tasks that ended.
  double task_tokens_ = 0;
  // Snapshot::task_growth and what a task under way still adds (task_growth.hpp).
  TaskGrowth growth_;
  // Snapshot::task_start_tokens: the smallest first prompt of a new task placed.
  double task_start_ = 0;
  TasksUnderWay tasks_;
  // Reused per route: each replica's tasks_reach_tokens.
  std::vector<double> reach_;
  SharedIds shared_ids_;
  // What the replicas' KV cache events say of the request being routed.
  Residency residency_;
};

}  // namespace warden::core
