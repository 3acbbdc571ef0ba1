#include "whatif/driver.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

#include "engine/config_check.hpp"
#include "protocol/kv_events.hpp"
#include "settings/routing.hpp"
#include "whatif/clients.hpp"
#include "whatif/direct.hpp"
#include "whatif/fleet.hpp"
#include "whatif/flight.hpp"
#include "whatif/senses.hpp"
#include "whatif/warden.hpp"

namespace warden::whatif {

namespace {

// Events ordered by time, then by the order they were scheduled (deterministic ties).
struct Timed {
  enum class Kind : std::uint8_t { step_done, arrive, client_done, restart };
  double time;
  std::uint64_t seq;
  Kind kind;
  // The step's key (Fleet::step_key) for step_done, the replica for restart, the request id otherwise.
  std::uint64_t id;
  bool operator>(const Timed& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

// What happens next in a level: the earliest timed event or one of the driver's own clocks. At the same
// time they happen in this order: timed events, the window's end, a scrape, a publish, a sample, a timeline
// mark, due turns, the held head's deadline, the other client's balancer's publish.
enum class Next : std::uint8_t {
  timed,           // the earliest Timed event
  window_end,      // the measuring window ends
  scrape,          // the warden scrapes the engines' metrics (held requests are routed again)
  publish,         // vLLM's coordinator publishes its stats to the API servers (policy vllm-lb)
  sample,          // "replicas busy" and live sessions are sampled
  timeline_mark,   // a timeline interval ends
  turns_due,       // sessions' next turns are due: their requests are sent
  head_deadline,   // the held head's deadline: held requests are routed again
  direct_publish,  // vLLM's coordinator publishes to the other client's balancer (whatif/direct.hpp)
};

// One timeline interval under way: when it began and the engines' prefix counters then.
struct Interval {
  double from = 0;
  report::PrefixCounters counters;
};

// One level under way: its window and the driver's clocks in it.
struct Level {
  std::uint64_t carried_sessions = 0;  // sessions the previous level had started (carry_over)
  bool carried_on = false;             // its sessions run on into the next level (no drain)
  bool open = true;                    // the measuring window
  double window_end = 0;
  double next_sample = 0;
  double next_mark = kInf;  // the timeline's next interval end
  Interval interval;
  report::PrefixCounters start;  // the engines' prefix counters when it began
  std::uint64_t preempt_start = 0;
};

// One policy's experiment over every level: the clock and its events. The parts (fleet, senses, warden,
// clients) do what happens, the driver says when, and keeps each level's figures. All but the fleet and
// what the warden knows of it (carried from the policy before with warm_start) are its own, from the seed.
class Driver {
 public:
  Driver(const SimulationConfig& config, const Hooks& hooks, Fleet& fleet, Senses& senses, double now)
      : config_(config),
        fleet_(fleet),
        senses_(senses),
        warden_(config, hooks, fleet, senses),
        clients_(config),
        direct_(config, fleet),
        now_(now) {}

  // Runs the policy's levels, their rows and stats added to `outcome`: the model time it ended at.
  Result<double> run(const SimulatePolicy& policy, Outcome& outcome) {
    outcome_ = &outcome;
    if (auto ok = warden_.start(policy, now_); !ok) {
      return ok.error();
    }
    for (std::size_t i = 0; i < config_.levels.size(); ++i) {
      if (auto ok = run_level(config_.levels[i], i); !ok) {
        return ok.error();
      }
    }
    return now_;
  }

 private:
  Result<void> run_level(int sessions, std::size_t level_index) {
    Level level = begin_level(sessions, level_index);
    while (level.open || (!level.carried_on && !flights_.empty())) {
      const auto [t, next] = next_event(level);
      if (t == kInf) {
        return std::string("what-if driver stalled: requests in flight but nothing scheduled");
      }
      now_ = t;
      if (auto ok = happen(next, level); !ok) {
        return ok;
      }
    }
    end_level(level);
    return {};
  }

  // Opens the level's loop, its window and its clocks at now_.
  Level begin_level(int sessions, std::size_t level_index) {
    const std::string policy(warden_.policy().name);
    Level level;
    warden_.start_level(level_index);
    direct_.start_level(level_index, now_);
    level.carried_sessions = clients_.start_loop(static_cast<std::size_t>(sessions), level_index, now_,
                                                 warden_.policy().settings.ceiling);
    level.carried_on = config_.carry_over && level_index + 1 < config_.levels.size();
    recorder_.emplace(policy, sessions);
    stats_ = LevelStats{};
    stats_.policy = policy;
    stats_.sessions = sessions;
    stats_.begin = now_;
    stats_.min_live_sessions = std::numeric_limits<std::uint32_t>::max();
    stats_.requests_per_replica.assign(config_.replicas, 0);
    stats_.groups = clients_.groups();
    level.preempt_start = fleet_.preemptions();
    recorder_->begin(now_);
    level.start = fleet_.prefix();
    recorder_->set_prefix_start(level.start);
    level.window_end = now_ + config_.duration;
    level.next_sample = now_ + config_.busy_interval;
    level.interval = Interval{now_, level.start};
    interval_tasks_ = 0;
    interval_requests_ = 0;
    level.next_mark = config_.timeline > 0 ? now_ + config_.timeline : kInf;
    if (config_.restart && config_.restart->replica < config_.replicas) {
      push(now_ + config_.restart->after, Timed::Kind::restart, config_.restart->replica);
    }
    return level;
  }

  // The next thing to happen and when (kInf: nothing is scheduled); at the same time the first of
  // Next's order.
  std::pair<double, Next> next_event(const Level& level) const {
    std::pair<double, Next> next{queue_.empty() ? kInf : queue_.top().time, Next::timed};
    const auto consider = [&](double candidate, Next what) {
      if (candidate < next.first) {
        next = {candidate, what};
      }
    };
    if (level.open) {
      consider(level.window_end, Next::window_end);
    }
    consider(senses_.next_scrape(), Next::scrape);
    if (warden_.policy().settings.vllm_model) {
      consider(warden_.next_publish(), Next::publish);
    }
    if (level.open) {
      consider(level.next_sample, Next::sample);
      consider(level.next_mark, Next::timeline_mark);
    }
    if (const auto due = clients_.next_ready_at()) {
      consider(*due, Next::turns_due);
    }
    consider(warden_.head_deadline(now_), Next::head_deadline);
    consider(direct_.next_publish(), Next::direct_publish);
    return next;
  }

  Result<void> happen(Next next, Level& level) {
    switch (next) {
      case Next::timed:
        return handle_next_timed();
      case Next::window_end:
        close_window(level);
        return {};
      case Next::scrape:
        senses_.scrape(fleet_, now_);
        return retry_held();
      case Next::publish:
        warden_.publish(now_);
        return {};
      case Next::sample:
        sample();
        level.next_sample += config_.busy_interval;
        return {};
      case Next::timeline_mark:
        mark_interval(level.interval, stats_.begin);
        level.next_mark += config_.timeline;
        return {};
      case Next::turns_due:
        send_ready();
        return {};
      case Next::head_deadline:
        return retry_held();
      case Next::direct_publish:
        direct_.publish(now_);
        return {};
    }
    return {};
  }

  // The measuring window ends: the level's figures are taken, and its loop stops handing out turns (unless
  // its sessions run on into the next level).
  void close_window(Level& level) {
    level.open = false;
    recorder_->end(now_);
    const report::PrefixCounters end = fleet_.prefix();
    recorder_->set_prefix_end(end);
    if (config_.timeline > 0 && now_ > level.interval.from) {
      mark_interval(level.interval, stats_.begin);
    }
    stats_.prefix_hits = end.hits - level.start.hits;
    stats_.prefix_queries = end.queries - level.start.queries;
    stats_.end = now_;
    if (!level.carried_on) {
      clients_.stop();
    }
  }

  // The level drained (or runs on into the next): its row and stats.
  void end_level(const Level& level) {
    stats_.drained = now_;
    if (!level.carried_on) {
      warden_.agents_stopped();
    }
    if (config_.workload.agentic.enabled) {
      stats_.task_tokens = warden_.task_tokens(now_);
    }
    stats_.preemptions = fleet_.preemptions() - level.preempt_start;
    stats_.sessions_started = clients_.sessions_started() - level.carried_sessions;
    outcome_->rows.push_back(recorder_->row());
    outcome_->levels.push_back(stats_);
  }

  void push(double time, Timed::Kind kind, std::uint64_t id) { queue_.push(Timed{time, seq_++, kind, id}); }

  // The request's reply (or its failure) is on its way back to the client.
  void reply(std::uint64_t id) { push(now_ + config_.client_rtt / 2, Timed::Kind::client_done, id); }

  // The turns due now are sent: each reaches a warden (the other client's: its replica) rtt/2 after its
  // client sent it.
  void send_ready() {
    for (Flight& f : clients_.send_ready(now_)) {
      if (!f.direct) {
        f.warden = warden_.pick_warden();
      }
      const std::uint64_t id = fleet_.next_request_id();
      const double arrives = f.started + config_.client_rtt / 2;
      f.in_window = window_open();
      flights_.emplace(id, std::move(f));
      if (window_open()) {
        ++stats_.requests;
      }
      stats_.max_in_flight =
          std::max<std::uint32_t>(stats_.max_in_flight, static_cast<std::uint32_t>(flights_.size()));
      push(arrives, Timed::Kind::arrive, id);
    }
  }

  bool window_open() const { return !recorder_->end_time().has_value(); }

  // The earliest timed event: a request reaches the warden, an engine step ends, a reply reaches its client.
  Result<void> handle_next_timed() {
    const Timed ev = queue_.top();
    queue_.pop();
    switch (ev.kind) {
      case Timed::Kind::arrive:
        if (auto ok = arrive(ev.id); !ok) {
          return ok;
        }
        break;
      case Timed::Kind::step_done:
        if (const auto replica = fleet_.current(ev.id)) {  // else a step of an engine since restarted
          step_done(*replica);
        }
        break;
      case Timed::Kind::client_done:
        client_done(ev.id);
        break;
      case Timed::Kind::restart:
        restart(static_cast<std::uint32_t>(ev.id));
        break;
    }
    if (!error_.empty()) {
      return error_;
    }
    return {};
  }

  Result<void> arrive(std::uint64_t id) {
    Flight& f = flights_.at(id);
    if (f.direct) {  // the other client's request reaches its replica, the warden never sees it
      f.arrived = now_;
      if (f.failed) {
        reply(id);
      } else {
        direct_.route(f);
        dispatch(id);
      }
      return {};
    }
    const auto arrival = warden_.arrive(id, f, now_, stats_);
    if (!arrival) {
      return arrival.error();
    }
    switch (*arrival) {
      case Warden::Arrival::dispatch:
        dispatch(id);
        break;
      case Warden::Arrival::failed:
        reply(id);
        break;
      case Warden::Arrival::held:
        break;
    }
    return {};
  }

  // Routes the held requests again (a round of the hold queue); each that goes is dispatched at once.
  Result<void> retry_held() {
    return warden_.retry_held(now_, flights_, stats_, [this](std::uint64_t id) { dispatch(id); });
  }

  // Hands a routed request to its replica's engine.
  void dispatch(std::uint64_t id) {
    Flight& f = flights_.at(id);
    const std::uint32_t replica = f.replica;
    const PolicySettings& policy = warden_.policy().settings;
    ++stats_.requests_per_replica[replica];
    if (f.task_start && f.in_window && f.group < stats_.groups.size()) {
      stats_.groups[f.group].start_waits.push_back(now_ - f.arrived);  // held at the warden (0: not)
    }
    engine::RequestSpec spec;
    spec.id = id;
    spec.prompt = std::move(f.prompt);
    spec.max_tokens = static_cast<int>(clients_.workload().config().max_output);
    spec.arrival_time = now_;
    spec.assume_cached_tokens = f.assume_cached;
    if (f.direct) {
      spec.session_id = DirectClient::session_id(f.session_hash);  // its own, the warden never sends it
    } else if (!policy.vllm_model && f.decision.thread_key != 0) {
      spec.session_id = protocol::kv::session_id_of(f.decision.thread_key);  // as the gateway sends it
      senses_.sent(replica, f.decision.thread_key, f.decision.thread_anew);
    }
    if (policy.ceiling) {
      f.sent = spec.prompt;
    }
    if (auto added = fleet_.add(replica, std::move(spec)); !added) {
      // Refused like a 400 from vLLM (e.g. prompt longer than max_model_len): the turn fails.
      f.failed = true;
      ended(f);
      reply(id);
      return;
    }
    if (!fleet_.stepping(replica)) {
      start_step(replica);
    }
  }

  void start_step(std::uint32_t replica) {
    if (const auto duration = fleet_.start_step(replica, now_)) {
      push(now_ + *duration, Timed::Kind::step_done, fleet_.step_key(replica));
    }
  }

  void step_done(std::uint32_t replica) {
    const Fleet::Step step = fleet_.end_step(replica);
    senses_.step(replica, step.kv, now_);
    for (const engine::Event& e : step.events) {
      if (e.kind != engine::Event::Kind::token) {
        continue;
      }
      const auto it = flights_.find(e.request);
      if (it == flights_.end()) {
        continue;
      }
      Flight& f = it->second;
      f.reply.push_back(e.token);
      if (e.first_token) {
        first_token(f, e.usage);
      }
      if (e.finished) {
        ended(f);
        reply(e.request);
      }
    }
    start_step(replica);
    if (warden_.holding()) {
      // A request may have finished: room may have freed (after start_step, which must run first).
      if (auto ok = retry_held(); !ok) {
        error_ = ok.error();
      }
    }
  }

  // The request's first token reached the warden (the other client's: its client), with its usage.
  void first_token(Flight& f, const engine::Usage& usage) {
    f.ttfb = now_ + config_.client_rtt / 2 - f.started;
    if (!f.direct) {
      warden_.first_token(f, usage.cached_tokens);
    }
    if (f.in_window && f.group < stats_.groups.size()) {
      GroupStats& g = stats_.groups[f.group];
      g.cached_tokens += usage.cached_tokens;
      g.prompt_tokens += usage.prompt_tokens;
      if (f.task_start) {
        g.start_ttfbs.push_back(*f.ttfb);
      }
    }
  }

  // The request ended on its replica (finished, refused or lost): the warden that routed it, or the other
  // client, counts it out.
  void ended(Flight& f) { f.direct ? direct_.finish(f) : warden_.finish(f); }

  // The replica's engine restarted (SimulationConfig::restart): its requests fail as a killed engine's
  // connections do (their clients send the turn again), and it comes back with an empty cache, its
  // counters and its KV events' seq from 0.
  void restart(std::uint32_t replica) {
    const std::vector<engine::RequestId> lost = fleet_.restart(replica);
    senses_.restarted(replica);
    for (const engine::RequestId id : lost) {
      if (const auto it = flights_.find(id); it != flights_.end()) {
        it->second.failed = true;
        ended(it->second);
        reply(id);
      }
    }
  }

  void client_done(std::uint64_t id) {
    auto node = flights_.extract(id);
    Flight& f = node.mapped();
    report::RequestRecord rec;
    rec.started_at = f.started;
    rec.ended_at = now_;
    rec.ttfb = f.ttfb;
    rec.turn = f.turn;
    if (!f.direct) {  // x-warden-route: only a request that went through a warden has one
      rec.route = f.route;
    }
    rec.expected_cached_ok = f.expected_cached_ok;
    if (f.failed) {
      rec.ok = false;
    } else {
      rec.output_tokens = static_cast<std::int64_t>(f.reply.size());
    }
    if (const std::optional<workload::TurnEnd> end = clients_.complete(f, now_)) {
      if (!f.direct) {
        warden_.answered(f, end->final_text);
      }
      rec.session_finished = end->session_finished;
      if (end->task_finished) {
        rec.task_started_at = end->task_started_at;
        ++interval_tasks_;
        if (window_open() && f.group < stats_.groups.size()) {
          ++stats_.groups[f.group].tasks;
        }
      }
    }
    ++interval_requests_;
    recorder_->record(rec);
  }

  void sample() {
    recorder_->add_busy_sample(fleet_.busy());
    const std::uint32_t live = clients_.live_sessions();
    stats_.max_live_sessions = std::max(stats_.max_live_sessions, live);
    stats_.min_live_sessions = std::min(stats_.min_live_sessions, live);
  }

  // Closes the timeline interval under way at now_ and opens the next.
  void mark_interval(Interval& interval, double level_begin) {
    const report::PrefixCounters now_counters = fleet_.prefix();
    report::TimelinePoint p;
    p.policy = stats_.policy;
    p.sessions = stats_.sessions;
    p.from = interval.from - level_begin;
    p.to = now_ - level_begin;
    p.prefix_hits = report::hit_percent(now_counters.hits - interval.counters.hits,
                                        now_counters.queries - interval.counters.queries);
    if (config_.workload.agentic.enabled) {
      p.tasks_per_hour = static_cast<double>(interval_tasks_) * 3600.0 / (now_ - interval.from);
    }
    p.requests = interval_requests_;
    stats_.timeline.push_back(std::move(p));
    interval = Interval{now_, now_counters};
    interval_tasks_ = 0;
    interval_requests_ = 0;
  }

  const SimulationConfig& config_;
  Fleet& fleet_;
  Senses& senses_;
  Warden warden_;
  Clients clients_;
  DirectClient direct_;  // the other client beside the warden (SimulationConfig::direct)
  double now_ = 0;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  Flights flights_;
  std::optional<report::LevelRecorder> recorder_;
  LevelStats stats_;
  std::uint64_t interval_tasks_ = 0;     // tasks finished in the timeline interval under way
  std::uint64_t interval_requests_ = 0;  // requests ended in it
  std::string error_;                    // an error raised inside an engine step, reported by the level loop
  Outcome* outcome_ = nullptr;
};

}  // namespace

Result<void> validate(const SimulationConfig& config) {
  if (config.replicas < 1 || config.replicas > 1024) {
    return std::string("replicas must be between 1 and 1024");
  }
  if (config.levels.empty()) {
    return std::string("at least one level is needed");
  }
  for (const int level : config.levels) {
    if (level < 1 || level > 100000) {
      return fmt::format("level {} out of range (1..100000 sessions)", level);
    }
  }
  if (!(config.duration > 0) || !std::isfinite(config.duration)) {
    return std::string("duration must be a positive number of seconds");
  }
  const auto positive = [](double v) { return v > 0 && std::isfinite(v); };
  if (!positive(config.scrape_interval) || !positive(config.busy_interval) ||
      !positive(config.vllm_publish_interval)) {
    return std::string("scrape, sample and publish intervals must be positive");
  }
  if (!(config.client_rtt >= 0) || !std::isfinite(config.client_rtt) || !(config.think_jitter >= 0) ||
      !std::isfinite(config.think_jitter)) {
    return std::string("client rtt and think jitter must be >= 0");
  }
  if (auto ok = settings::check_routing(config.routing, "routing"); !ok) {
    return ok.error();
  }
  if (config.carry_over && config.workload.agentic.enabled) {
    return std::string("carry-over: the agentic workload runs new agents at each level");
  }
  if (config.carry_over && !std::is_sorted(config.levels.begin(), config.levels.end())) {
    return std::string("carry-over: levels must not shrink (sessions are carried to the next level)");
  }
  if ((!config.tenants.empty() || config.workload.agentic.interactive > 0) &&
      !config.workload.agentic.enabled) {
    return std::string("tenants and interactive sessions: the agentic workload's agents only");
  }
  if (config.tenants.size() > 64 ||
      std::any_of(config.tenants.begin(), config.tenants.end(), [](std::uint32_t n) { return n == 0; })) {
    return std::string("tenants: at most 64, each a share of at least 1");
  }
  if (!(config.direct.share >= 0 && config.direct.share <= 1)) {
    return std::string("direct share: a share of the agents, 0 to 1");
  }
  if (config.direct.share > 0 && !config.workload.agentic.enabled) {
    return std::string("direct share: the agentic workload's agents only");
  }
  if (!(config.timeline >= 0) || !std::isfinite(config.timeline)) {
    return std::string("the timeline interval must be 0 (none) or a positive duration");
  }
  if (config.policies.empty()) {
    return std::string("at least one policy is needed");
  }
  const auto known = simulate_policy_names();
  for (const auto& p : config.policies) {
    if (std::find(known.begin(), known.end(), p) == known.end()) {
      return fmt::format("unknown policy '{}' (known: {})", p, fmt::join(known, ", "));
    }
  }
  if (auto ok = engine::validate(engine_config(config)); !ok) {
    return "engine: " + ok.error().message;
  }
  if (auto ok = workload::validate(config.workload); !ok) {
    return "workload: " + ok.error();
  }
  return {};
}

Result<Outcome> simulate(const SimulationConfig& config, const Hooks& hooks) {
  if (auto ok = validate(config); !ok) {
    return ok.error();
  }
  // Each policy is its own experiment: new engines at time 0 (unless warm_start carries the policy
  // before's, and its clock), and a Driver of its own.
  Fleet fleet(config);
  Senses senses(config, hooks);
  Outcome outcome;
  double now = 0;
  for (std::size_t p = 0; p < config.policies.size(); ++p) {
    if (p == 0 || !config.warm_start) {
      fleet.make();
      now = 0;
      senses.reset(fleet, now);
    }
    Driver driver(config, hooks, fleet, senses, now);
    const auto end = driver.run(*find_policy(config.policies[p]), outcome);
    if (!end) {
      return end.error();
    }
    outcome.model_seconds += *end - now;
    now = *end;
  }
  outcome.engine_steps = fleet.steps();
  return outcome;
}

}  // namespace warden::whatif
