// The simulation's types: what a what-if run is given (SimulationConfig), what it returns (Outcome, each
// level's LevelStats and GroupStats) and what it tells as it goes (Hooks). The driver (whatif/driver.hpp)
// and its parts (fleet, clients, senses, warden, direct, policies) read them from here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/router.hpp"
#include "core/session_table.hpp"
#include "core/types.hpp"
#include "core/vllm_balancer.hpp"
#include "engine/config.hpp"
#include "report/row.hpp"
#include "report/timeline.hpp"
#include "workload/workload.hpp"

namespace warden::whatif {

using core::RankLoad;
using core::VllmBalancer;

struct SimulationConfig {
  engine::EngineConfig engine;  // per replica; its `reply` is replaced by `replies`
  // How the workload's replies end, in every engine. Off by default: every reply runs to the workload's
  // max_output, as the reference measurement's 256-token replies did (docs/simulator.md).
  engine::ReplyLength replies{};
  std::uint32_t replicas = 4;
  workload::WorkloadConfig workload;  // its seed fixes the prompts
  std::vector<int> levels{4, 8, 16, 24, 32};
  double duration = 180.0;  // model seconds per level (measuring window)
  std::vector<std::string> policies{"vllm-lb", "affinity"};
  bool warm_start = false;  // carry the engines (and their caches) from one policy to the next
  // Carry the sessions from one level to the next, as a load tool that never restarts them: a level adds
  // sessions to those still running (their requests in flight at the window's end included) instead of
  // draining and starting N new ones. Only the last level drains. The chat workload only; levels must not
  // shrink.
  bool carry_over = false;
  std::uint64_t seed = 1;        // routing randomness (ties, vLLM's SO_REUSEPORT pick)
  double scrape_interval = 1.0;  // the warden's metrics scrape
  double busy_interval = 1.0;    // "replicas busy" sampling
  // Length of a timeline interval (model seconds; 0 = no timeline): each level's prefix hit rate and tasks
  // finished per interval of its window (LevelStats::timeline), to see a fall within a level.
  double timeline = 0.0;
  double client_rtt = 0.0;  // client <-> warden round trip: half on the way in, half on the way out
  // Extra client time before each turn, uniform in [0, think_jitter) from a seeded stream, on top of the
  // workload's fixed think_time: real clients drift apart, while a fixed gap keeps sessions that started
  // together in lock-step (all turns arriving in bursts).
  double think_jitter = 0.0;
  // The routing every Router policy runs with, as `serve` reads it from a model's `routing:`. The policy
  // sets `policy` and `affinity`, the engine `max_num_seqs`; `vllm_balancer` is also the score vLLM's own
  // balancer uses under policy `vllm-lb`; `rebalance` applies to `affinity` and `admission`. `admission`
  // and `cost_spill` apply to policy `admission` only (its `enabled` implied; cost-aware spill on unless
  // turned off), whose admission queue takes max_queue and max_wait from here too.
  core::RoutingConfig routing{.cost_spill = {.enabled = true}};
  // ... and its session table's active window in typical turn gaps (SessionTableConfig's
  // adaptive_gap_factor, min_active_window): how long a conversation counts as resident after its last turn.
  double admission_gap_factor = 2.0;
  double admission_min_window = 3.0;  // seconds
  core::SessionTableConfig sessions{};
  // The warden listens to every engine's KV cache events (whatif/kv_sense.hpp): what each replica holds of
  // a request's thread is known, not estimated. Off: today's estimate from the warden's own traffic.
  bool kv_events = false;
  // Wardens in front of the replicas, with no shared state: a load balancer sends each request to one of
  // them at random (its own seeded stream). Each has its own Router (homes, in-flight counts); the hold
  // queue is one.
  std::uint32_t wardens = 1;
  // One replica's engine restarts this many model seconds into every level: its requests fail (their
  // clients send them again) and it comes back empty (its KV events' seq from 0, its index cleared).
  struct Restart {
    std::uint32_t replica = 0;
    double after = 0;
  };
  std::optional<Restart> restart;
  // Another client beside the warden (whatif/direct.hpp), agentic workload: this share of each level's
  // headless agents (rounded to the nearest agent, spread over the agents' order) is its, and sends
  // straight to the replicas by its own rule, never through the warden; LevelStats::groups keeps its
  // figures apart from the warden's agents'. 0: none, every agent through the warden.
  enum class DirectRule : std::uint8_t { vllm_lb, hash };
  struct Direct {
    double share = 0;
    DirectRule rule = DirectRule::vllm_lb;
  };
  Direct direct;
  std::uint32_t vllm_api_servers = 0;  // vLLM API server processes; 0 = one per replica (vLLM's default)
  double vllm_publish_interval = 0.1;  // vLLM coordinator's stats publish period
  // Every agent streams (Claude Code and Codex always do), and the warden keeps a held stream alive (its
  // response started, keep-alive events while it waits): task admission holds a start up to
  // task_admission.stream_max_wait (core::RequestFacts::kept_alive). Off: up to max_wait (8 minutes, for
  // a client that gives up after 10 without an answer), as before the warden kept held streams alive.
  bool keep_alive = true;
  // Agentic workload: the level's headless agents split between tenants in these proportions (empty: none
  // named, one fleet), each tenant's agents sending its own key; LevelStats::groups keeps each tenant's
  // figures. fair_shares off: they send none (the warden sees one fleet, first come first served), the
  // figures still kept per tenant.
  std::vector<std::uint32_t> tenants;
  bool fair_shares = true;
  // The interactive sessions' requests say their class (AgenticConfig::interactive). Off: they say
  // headless, as every client did before classes of work (held like the rest), the figures still apart.
  bool classes = true;
};

// The engine configuration every replica runs: `engine` with the workload's `replies`.
inline engine::EngineConfig engine_config(const SimulationConfig& config) {
  engine::EngineConfig c = config.engine;
  c.reply = config.replies;
  return c;
}

// One group of a level's agents (SimulationConfig::tenants, AgenticConfig::interactive): a tenant's
// headless agents, or the interactive sessions, and what they got.
struct GroupStats {
  std::string name;  // "headless", "interactive", "tenant 1", ...
  core::WorkClass work_class = core::WorkClass::headless;
  std::uint64_t tenant = 0;  // the key its agents send (0: none)
  std::uint32_t agents = 0;
  std::uint64_t tasks = 0;  // tasks whose final reply reached the client inside the window
  // Each task start sent inside the window: the seconds it was held at the warden (0: not held), and its
  // TTFB (from its send to its first token at the client: the hold, the engine's queue and the prefill).
  std::vector<double> start_waits;
  std::vector<double> start_ttfbs;
  bool direct = false;  // the other client's agents (SimulationConfig::direct), not the warden's
  // Prompt tokens of its requests sent inside the window and served from cache, each as its engine reported
  // at its first token (usage's cached_tokens), and all their prompt tokens: its own prefix hit rate.
  double cached_tokens = 0;
  double prompt_tokens = 0;
};

// What else happened in one level (for tests, docs and the trace).
struct LevelStats {
  std::string policy;
  int sessions = 0;
  double begin = 0;                              // model seconds
  double end = 0;                                // end of the window
  double drained = 0;                            // when the last in-flight request ended
  std::uint64_t requests = 0;                    // sent during the window
  std::uint64_t routes[core::route_count] = {};  // by core::Route; vllm-lb counts as balanced
  std::uint64_t sessions_started = 0;
  std::uint64_t preemptions = 0;
  double prefix_hits = 0;  // tokens, engine counters' delta over the window
  double prefix_queries = 0;
  std::uint64_t held = 0;               // requests held by admission (each once, whatever its final route)
  std::uint64_t refused = 0;            // requests refused because the admission queue was full
  double held_seconds = 0;              // their total wait
  std::uint32_t max_held = 0;           // admission queue length, peak
  std::uint32_t max_in_flight = 0;      // requests in flight at the warden, peak
  std::uint32_t max_live_sessions = 0;  // distinct sessions in flight or thinking, peak (== sessions)
  std::uint32_t min_live_sessions = 0;  // ... and low, sampled with the busy samples
  std::vector<std::uint32_t> requests_per_replica;
  std::vector<report::TimelinePoint> timeline;  // with SimulationConfig::timeline > 0
  double task_tokens = 0;  // agentic, Router policies: an agent task's measured size at the level's end
  // Agentic workload with interactive sessions or tenants: each group's figures (else empty).
  std::vector<GroupStats> groups;
};

struct Outcome {
  std::vector<report::Row> rows;  // one per (policy, level), in run order; Row::policy = policy name
  std::vector<LevelStats> levels;
  double model_seconds = 0;  // virtual time simulated
  std::uint64_t engine_steps = 0;
  std::uint64_t requests = 0;
};

// One routing decision of a Router policy, with the snapshot it was made over (hooks only).
struct DecisionTrace {
  double time = 0;
  std::string policy;
  int sessions = 0;         // the level
  core::Snapshot snapshot;  // empty replicas for vllm-lb (the balancer has its own views)
  core::Decision decision;
  std::vector<RankLoad> live;  // the engines' true waiting/running at that moment
};

struct Hooks {
  std::function<void(const DecisionTrace&)> on_decision;
  // Each warden scrape: model time and the metrics as the Router will see them until the next one.
  std::function<void(double, std::span<const core::ReplicaMetrics>)> on_scrape;
};

}  // namespace warden::whatif
