#pragma once
// Value types of the routing core: what a routing decision reads (Snapshot, RequestFacts) and what it
// returns (Decision). Pure data, no I/O; the gateway (`serve`) and the what-if driver (`simulate`) build the
// same values, so the same decision code runs under both.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/replica_figures.hpp"

namespace warden::core {

/// Replica index 0..N-1 within one model (a DP rank or one endpoint of an external-LB set).
using ReplicaIndex = std::uint32_t;

/// Time is always a parameter: nanoseconds since an epoch the caller chooses (the gateway passes
/// steady_clock::now().time_since_epoch(), the what-if driver its virtual clock). Never read a clock here.
using Time = std::chrono::nanoseconds;

/// Live state of one replica as the router sees it at decision time: its engine's figures (running,
/// waiting, KV usage and capacity, prefill rate, computed tokens) and what the warden knows itself. Copied
/// into a Snapshot: decisions never read live atomics.
struct ReplicaState : ReplicaFigures {
  /// From the poller (health check / scrape success). Unhealthy replicas are never chosen unless pinned.
  bool healthy = true;
  /// Requests the warden has sent to this replica and not yet finished (its own live count; fresh).
  std::uint32_t in_flight = 0;
  /// Requests the warden sent since the last successful metrics scrape (vLLM's balancer adds its own
  /// assignments to its stale copy the same way).
  std::uint32_t sent_since_scrape = 0;
  /// Conversations whose home is this replica and that were seen within the active window (a subagent that
  /// returned its result no longer counts: Router::answered).
  std::uint32_t active_conversations = 0;
  /// Estimate of the KV tokens those conversations hold: the sum of their last prompt lengths.
  std::uint64_t held_tokens = 0;
  /// What the other wardens in front of the same replicas published (shared state, a few seconds old at
  /// most; zero with one warden): their requests in flight, active conversations and held tokens here.
  std::uint32_t peer_in_flight = 0;
  std::uint32_t peer_active_conversations = 0;
  std::uint64_t peer_held_tokens = 0;
  /// How many other wardens published a fresh load (0 with one warden). Each sees only some of a
  /// conversation's turns when a load balancer spreads them.
  std::uint32_t peer_wardens = 0;
  /// Prompt tokens still to prefill for the warden's requests on this replica that have no first token yet
  /// (each counted as its expected uncached part; kept by the Router).
  std::uint64_t prefill_backlog_tokens = 0;
  /// Agent tasks under way whose main thread lives here (core/tasks_under_way.hpp; this warden's).
  std::uint32_t tasks_under_way = 0;
  /// What those tasks' main threads hold now: the sum of their last prompts.
  std::uint64_t tasks_tokens = 0;
  /// What they are expected to reach: each one's last prompt plus the growth it is still expected to add
  /// (TaskAdmission::packing growth or remaining, once a task ended; 0 otherwise).
  std::uint64_t tasks_reach_tokens = 0;
  /// Prompt tokens of the request being routed that this replica's cache holds, as its engine's KV cache
  /// events tell (core/kv_index.hpp; capped as the engine caps a hit); nullopt = not known exactly (no live
  /// events from it), the estimate applies. Set by the Router for each request.
  std::optional<std::uint32_t> cached_for_request;
};

/// Spill threshold of a model: "auto" (= max(1, max_num_seqs / 4), 8 at 32) or a fixed number.
struct SpillThreshold {
  /// The largest fixed threshold a config may give.
  static constexpr std::uint32_t max_fixed = 1'000'000;
  /// Empty = auto.
  std::optional<std::uint32_t> fixed;

  /// The threshold in requests in flight for a model with this `max_num_seqs` (always >= 1).
  [[nodiscard]] std::uint32_t resolve(std::uint32_t max_num_seqs) const {
    return std::max<std::uint32_t>(1, fixed ? *fixed : max_num_seqs / 4);
  }
  [[nodiscard]] bool is_auto() const { return !fixed.has_value(); }
  /// "auto" or an integer from 1 to max_fixed; nullopt for anything else (the caller reports the error).
  [[nodiscard]] static std::optional<SpillThreshold> parse(std::string_view text);
  /// "auto" or the number, as it would be written in the config.
  [[nodiscard]] std::string to_string() const;
  /// UI label: "8 (auto)" or "4".
  [[nodiscard]] std::string label(std::uint32_t max_num_seqs) const;

  friend bool operator==(const SpillThreshold&, const SpillThreshold&) = default;
};

/// Working-set admission of one model: when the conversations resident on the replicas would no longer fit
/// their KV caches, new conversations are held back (route `queued`) instead of evicting everyone's prefix.
/// The gateway (and the what-if driver) keep the held requests in a per-model queue, first come first
/// served, and route them again whenever room may have freed.
struct AdmissionConfig {
  /// `admission: off | auto`.
  bool enabled = false;
  /// Held requests per model beyond which a new one is refused at once (503 with Retry-After).
  std::uint32_t max_queue = 64;
  /// A request held this long is admitted over capacity (the bound on a conversation's wait).
  Time max_wait = std::chrono::seconds(30);
  /// Hysteresis on working set / KV capacity: new conversations are admitted while some replica's resident
  /// working set plus the new prompt stays within high_water x capacity; once one had to be held, only
  /// when it fits within low_water x capacity again. (The working set counts the shared system prompt in
  /// every conversation while the cache holds it once, so values a little above 1 still fit.)
  double high_water = 1.0;
  double low_water = 0.9;
  /// Hold only while requests wait: a replica on which nothing waits (at the last scrape, and no request of
  /// the warden's without a first token) may take a new conversation whatever the estimate says (it counts
  /// ended conversations until they leave the active window, while LRU evicts exactly those first).
  bool only_when_waiting = false;
  /// Hold a task's start too (RequestFacts::task_start), not only a new conversation: while its home has no
  /// room the start waits, and it is released when the home has room (or at max_wait). A task under way is
  /// never held.
  bool hold_task_starts = false;
  /// Held requests of one tenant beyond which its next one is refused (503 with Retry-After), so no tenant
  /// fills the queue for the others; nullopt = auto, half of max_queue (hold_queue.hpp, tenant_queue()).
  std::optional<std::uint32_t> tenant_queue;

  friend bool operator==(const AdmissionConfig&, const AdmissionConfig&) = default;
};

/// Which of vLLM's data-parallel balancer scores route `balanced` follows (docs/routing.md):
/// - current: vLLM since its internal-LB fix, max(in_flight, waiting + running) plus a KV-pressure penalty
///   on waiting requests (vllm/v1/engine/core_client.py, DPLBAsyncMPClient.get_core_engine_for_request);
/// - legacy: older vLLM, 4 * waiting + running.
enum class VllmBalancerModel : std::uint8_t { current, legacy };

[[nodiscard]] std::string_view vllm_balancer_model_name(VllmBalancerModel model);
[[nodiscard]] std::optional<VllmBalancerModel> parse_vllm_balancer_model(std::string_view name);

/// Spill by predicted time to first token instead of by count: a turn leaves its home only when the prefill
/// queued ahead of it there plus its own uncached part would take longer than the queue plus its whole
/// prompt elsewhere, by more than `margin`. Needs the replicas' prefill rates; until they are measured the
/// count rule (spill_threshold) applies.
struct CostSpill {
  /// On by default: a move is priced by the prefill it costs (docs/routing.md, "Spill threshold").
  bool enabled = true;
  Time margin = std::chrono::seconds(2);

  friend bool operator==(const CostSpill&, const CostSpill&) = default;
};

/// How task admission counts what the tasks under way on a replica will hold (core/task_admission.hpp):
/// - mean: each task grown to a task's measured size (Snapshot::task_tokens), and a new one as large;
/// - growth: each task's last prompt plus the growth it is still expected to add, as the ended tasks that
///   grew further went on (core/task_growth.hpp, the mean residual growth), and a new one its own prompt
///   plus a task's mean growth;
/// - remaining: each task's last prompt plus a task's mean growth less what it grew already (not below 0),
///   and a new one its prompt plus the mean growth;
/// - shared: as growth, with the prompt start the tasks on a replica share (system prompt and tools,
///   Snapshot::task_start_tokens) counted once: the prefix cache holds it once.
enum class TaskPacking : std::uint8_t { mean, growth, remaining, shared };

[[nodiscard]] std::string_view task_packing_name(TaskPacking packing);
[[nodiscard]] std::optional<TaskPacking> parse_task_packing(std::string_view name);

/// Agents past the caches (core/task_admission.hpp): while the agent tasks under way would outgrow what the
/// replicas keep warm (GPU cache, or host memory with vLLM's CPU offload), a new agent task's first request
/// waits (route `queued`) until one ends or `max_wait` has passed. A task under way is never held.
struct TaskAdmission {
  /// `task_admission: auto | off`.
  bool enabled = true;
  /// A held task start is placed as usual after this wait: headless agents wait for minutes anyway, and
  /// 8 minutes leave a request its first token within Claude Code's 10-minute request timeout.
  Time max_wait = std::chrono::minutes(8);
  /// The bound of a held task start whose client's wait is kept alive (RequestFacts::kept_alive): no client
  /// timeout bounds it, so it is the operator's choice. nullopt = auto (core::task_max_wait):
  /// `auto_stream_max_wait` where every replica keeps about two tasks warm (core::keeps_two_tasks_warm),
  /// max_wait's elsewhere. Measured on the RTX 5090 host (2-3 tasks a replica), 30 minutes change nothing at
  /// 4-26 agents and buy 3 % at 32, 15 % at 40 and 91 % at 48; where a replica keeps less than two tasks (the
  /// reference host with agents) task admission runs one task a replica, the 8-minute cut is what fills the
  /// idle GPUs, and 30 minutes cost 14-26 % of the tasks/h at 24-32 agents
  /// (docs/experiments/2026-12-07-classes-and-tenants.md).
  std::optional<Time> stream_max_wait;
  static constexpr Time auto_stream_max_wait = std::chrono::minutes(30);
  /// What a replica's tasks under way are taken to hold (TaskPacking).
  TaskPacking packing = TaskPacking::mean;
  /// How long an interactive task that ended keeps its room on its replica after its session's last
  /// request (core/tasks_under_way.hpp): its person reads and types the next task, which is never held, so
  /// it goes into that room instead of over a full replica, and headless starts wait for it (0: no room
  /// kept). 2 minutes: a person's reading (30-90 s) and the reply's own time.
  Time interactive_room = std::chrono::minutes(2);

  friend bool operator==(const TaskAdmission&, const TaskAdmission&) = default;
};

/// Routing configuration of one model, changeable at runtime through the Router.
struct RoutingConfig {
  /// Off = balance like vLLM's own balancer (route `balanced`).
  bool affinity = true;
  SpillThreshold spill_threshold{};
  /// Per replica (vLLM applies `--max-num-seqs` per DP rank). vLLM's default is 256; 0 is treated as 1.
  std::uint32_t max_num_seqs = 256;
  /// Registry name of the policy the Router uses (see policy.hpp); `decide()` itself is always `affinity`.
  std::string policy = "affinity";
  AdmissionConfig admission{};
  /// The score of route `balanced` (affinity off, policy `vllm-lb`).
  VllmBalancerModel vllm_balancer = VllmBalancerModel::current;
  CostSpill cost_spill{};
  /// Re-home a conversation whose home is overloaded (rebalance.hpp); off = a conversation leaves its home
  /// only by a spill (one request) or a failover.
  bool rebalance = true;
  /// Threads of a session (an agent's subagents) have their own homes, and a new conversation or thread
  /// prefers the replicas where its prompt start is cached (decide.hpp, rule 7). Off = one home per
  /// session, every thread's requests included, and new conversations placed by load alone.
  bool threads = true;
  TaskAdmission task_admission{};

  friend bool operator==(const RoutingConfig&, const RoutingConfig&) = default;
};

/// Immutable copy of everything a decision reads. Cheap to build (one small vector).
struct Snapshot {
  std::vector<ReplicaState> replicas;
  /// The model's routing as it is at decision time.
  RoutingConfig routing{};
  /// Admission state (kept by the Router): a new conversation had to be held and none has been admitted
  /// under the low water mark since.
  bool admission_holding = false;
  /// The prompt tokens an agent task reaches, as measured (kept by the Router: a running mean of the last
  /// prompt of each task that ended); 0 = none ended yet.
  double task_tokens = 0;
  /// How much a task grows from its first prompt to its last, as measured (kept by the Router: the mean of
  /// the last tasks that ended, core/task_growth.hpp); 0 = none ended yet.
  double task_growth = 0;
  /// The prompt start new agent tasks share, as the Router takes it: the smallest first prompt of a new
  /// task it placed (its start and the shortest first message; 0 = none placed yet).
  double task_start_tokens = 0;

  /// routing.max_num_seqs, at least 1.
  [[nodiscard]] std::uint32_t max_num_seqs() const {
    return std::max<std::uint32_t>(1, routing.max_num_seqs);
  }
  /// routing.spill_threshold resolved against max_num_seqs() (>= 1).
  [[nodiscard]] std::uint32_t spill_threshold() const {
    return routing.spill_threshold.resolve(max_num_seqs());
  }
};

/// A conversation's identity as a 64-bit hash (the protocol layer hashes the id or the fingerprint).
struct SessionKey {
  std::uint64_t hash = 0;

  friend bool operator==(const SessionKey&, const SessionKey&) = default;
};

/// Who waits for a request's answer (core/work_class.hpp): a person at the keyboard (an interactive Claude
/// Code, a client an operator's rule names) or a fleet (`claude -p`, and by default any other client).
/// Task admission never holds an interactive task start, and the hold queue lets interactive requests out
/// before headless ones.
enum class WorkClass : std::uint8_t { headless, interactive };
inline constexpr std::size_t work_class_count = 2;

/// "headless", "interactive" (logs, metrics, the admin API).
[[nodiscard]] std::string_view work_class_name(WorkClass work_class);

/// The thread a request belongs to, beyond its key (RequestFacts::session is the thread's key: the session's
/// own for its main thread, which is what a client without threads sends).
struct ThreadFacts {
  /// The session's key (0 = not given: the thread is its own session).
  std::uint64_t session = 0;
  /// The parent thread's key, when the client names one (0: none).
  std::uint64_t parent = 0;
  /// A digest of the prompt's start (0 = none): where requests with the same start went, its prefix is
  /// cached.
  std::uint64_t start = 0;
  /// The start fills the whole digest (its first 4 KiB, about a thousand tokens or more, are shared with
  /// where it ran): only then is reading it from a cache worth a conversation more of load (decide.hpp).
  bool long_start = false;
  /// A side request (a title, a count, a quota probe: no tools offered in a session whose turns offer
  /// them): it belongs to no thread. It goes to the session's home if it has one, and moves, places and
  /// remembers nothing.
  bool side = false;
};

/// Preferred replicas as a bit set: bit i for replica i (replicas from 64 on are never preferred).
using ReplicaSet = std::uint64_t;
inline constexpr ReplicaIndex replica_set_size = 64;

/// The routing facts of one request: plain values, already validated by the protocol layer.
struct RequestFacts {
  /// Empty when the request has no conversation identity at all: it is placed like a new conversation and
  /// nothing is remembered. With threads, the thread's key.
  std::optional<SessionKey> session;
  ThreadFacts thread{};
  /// A digest of the conversation's first message (0 = unknown): a session id whose main-thread requests
  /// take turns between first messages is shared by several conversations (core/shared_ids.hpp).
  std::uint64_t first_message = 0;
  /// Replicas a new thread prefers among those of comparable load (decide.hpp): they hold another thread
  /// of its session, or served its prompt start (the Router fills this in itself).
  ReplicaSet preferred = 0;
  /// The conversation's home replica, looked up in the session table (the Router fills this in itself).
  std::optional<ReplicaIndex> home;
  /// Client pin (X-Warden-Replica or X-data-parallel-rank). Out of range: the gateway should already have
  /// answered 400; decide() returns no replica with reason pin_out_of_range rather than guessing.
  std::optional<ReplicaIndex> pin;
  /// Prompt size estimate in tokens (remembered as the tokens the conversation holds on its home).
  std::uint32_t prompt_tokens = 0;
  /// The request offers tools: an agent's turn (protocol::RequestInfo::offers_tools).
  bool offers_tools = false;
  /// The first request of an agent task: the thread is the main one and has no assistant turn since the
  /// user's prompt (no tool result in the user messages at its end).
  bool task_start = false;
  /// Its session has an agent task under way (core/tasks_under_way.hpp; the Router fills this in itself).
  bool task_under_way = false;
  /// Its session's interactive task that ended kept its room on its home (TaskAdmission::interactive_room;
  /// the Router fills this in itself): the next task it starts stays home, in that room.
  bool room_kept = false;
  /// A new interactive task: the replica of the room kept longest for a person of its tenant (the Router
  /// fills this in itself): it goes there, into that room.
  std::optional<ReplicaIndex> kept_room_at;
  /// How long this request has already waited in the model's admission queue (0 on its first routing).
  Time queued_for{0};
  /// Tokens the home is expected to have cached for this conversation: its previous prompt there (the
  /// Router fills this in itself, with `home`; a home found in the replicas' KV cache events: what they
  /// show it holds).
  std::uint32_t home_cached_tokens = 0;
  /// Prompt tokens the home has computed for other requests since this conversation's previous turn there
  /// (from the engine's own counters; the Router fills it in). Once it reaches the home's KV capacity, LRU
  /// has evicted that turn's blocks. nullopt = unknown.
  std::optional<std::uint64_t> home_computed_since;
  /// Who waits for its answer (core/work_class.hpp): an interactive task start is never held by task
  /// admission, and a held interactive request goes out of the hold queue before any headless one.
  WorkClass work_class = WorkClass::headless;
  /// The tenant whose fair share it draws on (a digest of its API key or configured header; 0 = requests
  /// that name none), and that tenant's weight: held requests are let in by fair share between tenants
  /// (core/hold_queue.hpp), and one tenant may hold at most admission.tenant_queue of them.
  std::uint64_t tenant = 0;
  double tenant_weight = 1;
  /// The client's wait is kept alive: a streaming request whose response the warden started while it is
  /// held (status, headers, the API's keep-alive events). No client timeout bounds its hold, so task
  /// admission holds it up to TaskAdmission::stream_max_wait instead of max_wait.
  bool kept_alive = false;
};

/// How a request was routed. Names (route_name) go into the X-Warden-Route header and logs.
enum class Route : std::uint8_t {
  new_conversation,  ///< "new": first request of a conversation, placed on the least-loaded replica
  sticky,            ///< "sticky": stayed on the conversation's home
  spilled,           ///< "spilled": home over the spill threshold; this request went elsewhere, home kept
  pinned,            ///< "pinned": the client pinned the replica
  balanced,          ///< "balanced": affinity off (or a load-only baseline policy)
  failover,          ///< "failover": home unhealthy (or gone); the conversation was re-homed
  queued,            ///< "queued": held back by admission (no replica); route it again when room frees
  rehomed,  ///< "rehomed": home overloaded (rebalance.hpp); the conversation moved to a less loaded one
};
inline constexpr std::size_t route_count = 8;

[[nodiscard]] std::string_view route_name(Route route);
[[nodiscard]] std::optional<Route> parse_route(std::string_view name);

/// Why a decision has no replica.
enum class NoReplicaReason : std::uint8_t {
  none,
  no_replicas,         ///< the model has no replicas configured
  no_healthy_replica,  ///< every replica is unhealthy (gateway: 503)
  pin_out_of_range,    ///< pin >= number of replicas (gateway: 400; should have been caught earlier)
};

[[nodiscard]] std::string_view no_replica_reason_name(NoReplicaReason reason);

/// Result of a routing decision.
struct Decision {
  /// Empty when no replica can take the request; `reason` says why.
  std::optional<ReplicaIndex> replica;
  Route route = Route::new_conversation;
  NoReplicaReason reason = NoReplicaReason::none;
  /// Prompt tokens the chosen replica is expected to prefill (set by the Router; 0 from decide()). The
  /// Router counts them in the replica's prefill backlog until first_token(decision).
  std::uint32_t prefill_tokens = 0;
  /// Prompt tokens the chosen replica is expected to find cached (set by the Router): from its KV cache
  /// events when live (`expected_exact`), else the estimate (the previous prompt at home, 0 elsewhere).
  std::uint32_t expected_cached_tokens = 0;
  bool expected_exact = false;
  /// The chosen replica's block size (0 = unknown): the expectation's grain, a hit being whole blocks.
  std::uint32_t expected_block = 0;
  /// The key the Router knows the request's thread by (its session key, re-keyed for a shared id; 0 =
  /// none): the gateway sends it to the engine as the request's session_id, so the engine's KV cache events
  /// name the thread the way the Router looks it up.
  std::uint64_t thread_key = 0;
  /// The request does not continue its thread's previous prompt (it shrank to half or less: a compaction,
  /// a key reused for another conversation): the replica's chain of the thread is not its cache, and where
  /// its stores part from it teaches nothing.
  bool thread_anew = false;

  [[nodiscard]] bool ok() const { return replica.has_value(); }
  /// Held back by admission: not an error, the caller waits and routes the request again.
  [[nodiscard]] bool queued() const { return route == Route::queued && !replica; }
  friend bool operator==(const Decision&, const Decision&) = default;
};

}  // namespace warden::core
