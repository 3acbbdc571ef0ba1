#include "whatif/warden.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "base/splitmix.hpp"
#include "core/policy.hpp"
#include "whatif/fleet.hpp"
#include "whatif/senses.hpp"
#include "whatif/sim_types.hpp"

namespace warden::whatif {

namespace {

// A session's main thread (not a subagent's): only its first request, with no home, starts a new task.
bool main_thread(const Flight& f) {
  return f.thread_session == 0 || f.thread_session == f.session_hash;
}

constexpr std::uint64_t kRoutingStream = 0x5157A7E;
constexpr std::uint64_t kWardenStream = 0x3A7D3;

}  // namespace

Warden::Warden(const SimulationConfig& config, const Hooks& hooks, const Fleet& fleet, const Senses& senses)
    : config_(config),
      hooks_(hooks),
      fleet_(fleet),
      senses_(senses),
      rng_(level_seed(config.seed, kRoutingStream, 0)),
      warden_rng_(level_seed(config.seed, kWardenStream, 0)) {}

base::Result<void> Warden::start(const SimulatePolicy& policy, double now) {
  policy_ = &policy;
  balancer_.emplace(config_.replicas, config_.vllm_api_servers, config_.routing.vllm_balancer);
  publish(now);
  const core::RoutingConfig routing = policy_routing(policy, config_);
  const core::SessionTableConfig sessions = policy_sessions(policy, config_);
  // One Router per warden (SimulationConfig::wardens): no shared state between them.
  routers_.clear();
  for (std::uint32_t w = 0; w < std::max<std::uint32_t>(1, config_.wardens); ++w) {
    auto router = core::Router::make(core::router_config(routing, sessions));
    if (!router) {
      return base::Failure{router.error()};
    }
    routers_.push_back(std::move(*router));
  }
  held_ = core::HoldQueue<std::uint64_t, double>(hold_rules());
  return {};
}

void Warden::start_level(std::size_t level) {
  rng_ = core::SplitMixRng(level_seed(config_.seed, kRoutingStream, level));
  warden_rng_ = core::SplitMixRng(level_seed(config_.seed, kWardenStream, level));
}

void Warden::publish(double now) {
  if (balancer_) {
    const std::vector<core::RankLoad> loads = fleet_.live_loads();
    balancer_->publish(loads);
  }
  next_publish_ = now + config_.vllm_publish_interval;
}

std::uint32_t Warden::pick_warden() {
  if (routers_.size() <= 1) {
    return 0;
  }
  const auto n = static_cast<std::uint32_t>(routers_.size());
  return static_cast<std::uint32_t>(warden_rng_.unit() * static_cast<double>(n)) % n;
}

base::Result<Warden::Arrival> Warden::arrive(std::uint64_t id, Flight& f, double now, LevelStats& stats) {
  const PolicySettings& s = policy_->settings;
  f.arrived = now;
  if (f.failed) {
    return Arrival::failed;
  }
  if (s.vllm_model) {
    route_vllm(f, now, stats);
    return Arrival::dispatch;
  }
  // First come, first served: a request admission could hold does not overtake the held ones: a new
  // conversation under working-set admission (policy tasks: a task start too), a new session's main thread
  // under task admission alone (a subagent's first request belongs to a task under way, which is never
  // held: the gateway routes it at once). An interactive request is never held behind headless ones (the
  // queue's turn would let it out first anyway).
  const bool queues = work_class(f) != core::WorkClass::interactive &&
                      ((s.hold_task_starts && f.task_start) ||
                       (!router(f).home_of(f.session_hash, to_time(now)) && (s.admission || main_thread(f))));
  if (held_.waits_behind(queues)) {
    hold(id, f, now, stats);
    return f.failed ? Arrival::failed : Arrival::held;
  }
  auto routed = route_request(f, core::Time{0}, now, stats);
  if (!routed) {
    return routed.error();
  }
  if (!*routed) {
    hold(id, f, now, stats);
    return f.failed ? Arrival::failed : Arrival::held;
  }
  return Arrival::dispatch;
}

void Warden::route_vllm(Flight& f, double now, LevelStats& stats) {
  const core::BalancerPick pick = balancer_->route(rng_);
  f.replica = pick.rank;
  f.api_server = pick.server;
  f.route = "balanced";
  ++stats.routes[static_cast<std::size_t>(core::Route::balanced)];
  trace(core::Decision{f.replica, core::Route::balanced, core::NoReplicaReason::none}, now, stats,
        std::nullopt);
}

// The class of work a request says (SimulationConfig::classes).
core::WorkClass Warden::work_class(const Flight& f) const {
  return config_.classes ? f.work_class : core::WorkClass::headless;
}

// What the gateway knows of a request when it routes it.
core::RequestFacts Warden::request_facts(const Flight& f) const {
  core::RequestFacts facts;
  facts.session = core::SessionKey{f.session_hash};
  facts.thread.session = f.thread_session;
  facts.first_message = f.first_message;
  facts.thread.start = f.start.hash;
  facts.thread.long_start = f.start.bytes >= protocol::kPromptStartBytes;
  facts.prompt_tokens = f.prompt_tokens_estimate;
  facts.offers_tools = config_.workload.agentic.enabled;  // every agentic request offers its tools
  facts.task_start = f.task_start;
  facts.work_class = work_class(f);
  facts.tenant = config_.fair_shares ? f.tenant : 0;
  // Every agent streams: held, its response is started and kept alive (SimulationConfig::keep_alive).
  facts.kept_alive = config_.keep_alive;
  return facts;
}

// Routes a request that has waited `waited` through the Router: true when it has a replica, false when
// admission holds it.
base::Result<bool> Warden::route_request(Flight& f, core::Time waited, double now, LevelStats& stats) {
  const core::Time at = to_time(now);
  core::RequestFacts facts = request_facts(f);
  facts.queued_for = waited;
  std::optional<core::Snapshot> seen;
  if (hooks_.on_decision) {
    seen = router(f).snapshot(senses_.metrics(), at);
  }
  const core::Decision d = router(f).route(facts, senses_.metrics(), at, rng_);
  trace(d, now, stats, std::move(seen));
  if (d.queued()) {
    return false;
  }
  if (!d.ok()) {
    return fmt::format("no replica for a request: {}", core::no_replica_reason_name(d.reason));
  }
  f.replica = *d.replica;
  f.decision = d;
  f.awaiting_first = true;
  f.route = std::string(core::route_name(d.route));
  ++stats.routes[static_cast<std::size_t>(d.route)];
  return true;
}

// One routing decision to the hooks, with the snapshot it was made over.
void Warden::trace(const core::Decision& decision, double now, const LevelStats& stats,
                   std::optional<core::Snapshot> seen) {
  if (!hooks_.on_decision) {
    return;
  }
  DecisionTrace trace;
  trace.time = now;
  trace.policy = std::string(policy_->name);
  trace.sessions = stats.sessions;
  if (seen) {
    trace.snapshot = std::move(*seen);
  }
  trace.decision = decision;
  trace.live = fleet_.live_loads();
  hooks_.on_decision(trace);
}

// The hold queue's rules (core::HoldQueue) under the policy's routing, as the gateway configures them,
// with this run's max_queue (the Routers of the policies without admission have none).
core::HoldRules Warden::hold_rules() const {
  core::HoldRules rules = core::hold_rules(routers_.front().routing_config());
  rules.max_queue = config_.routing.admission.max_queue;
  return rules;
}

// Admission held the request: into the queue, or refused (the gateway's 503) when it is full.
void Warden::hold(std::uint64_t id, Flight& f, double now, LevelStats& stats) {
  if (!held_.join(id, request_facts(f), now)) {
    f.failed = true;
    ++stats.refused;
    return;
  }
  ++stats.held;
  stats.max_held = std::max<std::uint32_t>(stats.max_held, static_cast<std::uint32_t>(held_.size()));
}

base::Result<void> Warden::retry_held(double now, Flights& flights, LevelStats& stats,
                                      const std::function<void(std::uint64_t)>& dispatch) {
  std::optional<std::string> failed;
  // A tenant's share used: its tasks under way at every warden, as the gateway's Router counts them.
  const auto under_way = [this](std::uint64_t tenant) {
    double tasks = 0;
    for (const core::Router& r : routers_) {
      tasks += r.tasks_of_tenant(tenant);
    }
    return tasks;
  };
  held_.retry(
      now,
      [&](std::uint64_t id, core::Time waited) {
        Flight& f = flights.at(id);
        auto routed = route_request(f, waited, now, stats);
        if (!routed) {
          failed = routed.error();
          return core::Retried::stop;
        }
        if (!*routed) {
          return core::Retried::held;
        }
        stats.held_seconds += now - f.arrived;
        dispatch(id);
        return core::Retried::went;
      },
      under_way);
  if (failed) {
    return *failed;
  }
  return {};
}

// A nanosecond late, so that the wait the Router sees is never rounded below the bound. The queue's
// deadline is its earliest request's (each held up to its own bound: core::HoldQueue::deadline).
double Warden::head_deadline(double now) const {
  const std::optional<double> at = held_.deadline();
  return at ? std::max(now, *at + 1e-9) : kInf;
}

// What the Router expected the chosen replica to serve from cache, against what its engine reported.
void Warden::first_token(Flight& f, std::uint32_t cached) {
  if (!policy_->settings.vllm_model && f.awaiting_first) {
    const auto expected = static_cast<std::int64_t>(f.decision.expected_cached_tokens);
    const auto block = static_cast<std::int64_t>(fleet_.engine(f.replica).config().block_size);
    f.expected_cached_ok = std::abs(expected - static_cast<std::int64_t>(cached)) <= block;
  }
  router_first_token(f);
}

void Warden::router_first_token(Flight& f) {
  if (f.awaiting_first) {
    router(f).first_token(f.decision);
    f.awaiting_first = false;
  }
}

void Warden::finish(Flight& f) {
  if (policy_->settings.vllm_model) {
    balancer_->finish(f.api_server, f.replica);
  } else {
    router_first_token(f);
    router(f).finish(f.replica);
  }
}

// As the gateway sees it from the reply's stop reason (Router::answered).
void Warden::answered(const Flight& f, bool final_text) {
  if (policy_->settings.vllm_model) {
    return;
  }
  core::RequestFacts facts;
  facts.session = core::SessionKey{f.session_hash};
  facts.thread.session = f.thread_session;
  facts.first_message = f.first_message;
  facts.prompt_tokens = f.prompt_tokens_estimate;
  facts.offers_tools = config_.workload.agentic.enabled;
  router(f).answered(facts, final_text);
}

void Warden::agents_stopped() {
  for (core::Router& router : routers_) {
    router.agents_stopped();
  }
}

double Warden::task_tokens(double now) {
  return routers_.front().view(to_time(now)).task_tokens;
}

}  // namespace warden::whatif
