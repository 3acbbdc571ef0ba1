#include "whatif/driver.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>

#include <xxhash.h>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "base/splitmix.hpp"
#include "core/decide.hpp"
#include "core/hold_queue.hpp"
#include "core/policy.hpp"
#include "core/prefill_rate.hpp"
#include "core/replica_report.hpp"
#include "core/task_admission.hpp"
#include "core/task_slots.hpp"
#include "engine/engine.hpp"
#include "protocol/kv_events.hpp"
#include "protocol/request.hpp"
#include "whatif/kv_sense.hpp"
#include "whatif/prompt.hpp"
#include "workload/loop.hpp"

namespace warden::whatif {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Session indices of level i start at i * kLevelStride: every level has its own conversations, and a
// second policy pass replays exactly the same ones (the reference's "same random seed").
constexpr std::uint64_t kLevelStride = 1'000'000;

// `ceiling` routes as vLLM's balancer does: with every prefix after a task's first request cached, load
// balance is all that is left to routing.
bool is_vllm_model(std::string_view policy) {
  return policy == "vllm-lb" || policy == "ceiling";
}

// Policies of core's affinity with working-set admission (`tasks` also holds task starts).
bool is_admission(std::string_view policy) {
  return policy == "admission" || policy == "tasks" || policy == "tasks-priority";
}

bool holds_task_starts(std::string_view policy) {
  return policy == "tasks" || policy == "tasks-priority";
}

// Policies whose requests carry vLLM's `priority` (their task's start) to engines that schedule by it.
bool is_priority(std::string_view policy) {
  return policy == "priority" || policy == "tasks-priority";
}

// The first request of an agent task (core::RequestFacts::task_start): the main thread, and no tool result
// in the user messages since its last assistant turn (a compaction request at a task's start is one too).
bool is_task_start(const workload::Conversation& conv) {
  if (!conv.agent_id.empty()) {
    return false;
  }
  for (auto it = conv.messages.rbegin(); it != conv.messages.rend() && it->role == workload::Role::user;
       ++it) {
    if (!it->results.empty()) {
      return false;
    }
  }
  return !conv.messages.empty();
}

std::uint32_t common_prefix(const engine::Tokens& a, const engine::Tokens& b) {
  const auto end = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<std::uint32_t>(end.first - a.begin());
}

// The registry name a Router runs for a simulate policy name.
std::string core_policy(std::string_view policy) {
  if (policy == "warden-lb" || policy == "ceiling") {
    return "vllm-lb";
  }
  return is_admission(policy) || is_priority(policy) || policy == "task-slots" ? std::string("affinity")
                                                                               : std::string(policy);
}

// The engine model's counters as a replica's report (what its vLLM /metrics would say).
core::ReplicaReport engine_report(const engine::Metrics& m) {
  return {static_cast<double>(m.num_running),
          static_cast<double>(m.num_waiting),
          m.kv_cache_usage,
          std::int64_t{m.num_gpu_blocks},
          std::int64_t{m.block_size},
          static_cast<double>(m.prefix_cache_queries_total),
          static_cast<double>(m.all_prefix_hits()),
          static_cast<double>(m.num_preemptions_total),
          std::nullopt,
          std::int64_t{m.num_cpu_blocks},
          std::nullopt};
}

core::Time to_time(double seconds) {
  return core::Time(static_cast<std::int64_t>(std::llround(seconds * 1e9)));
}

// Events ordered by time, then by the order they were scheduled (deterministic ties).
struct Timed {
  enum class Kind : std::uint8_t { step_done, arrive, client_done, restart };
  double time;
  std::uint64_t seq;
  Kind kind;
  std::uint64_t
      id;  // replica (and its engine's generation, step_done) for step_done and restart, request id otherwise
  bool operator>(const Timed& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

// What happens next in a level: the earliest timed event or one of the driver's own clocks. At the same
// time they happen in this order: timed events, the window's end, a scrape, a publish, a sample, a timeline
// mark, due turns, the held head's deadline.
enum class Next : std::uint8_t {
  timed,          // the earliest Timed event
  window_end,     // the measuring window ends
  scrape,         // the warden scrapes the engines' metrics (held requests are routed again)
  publish,        // vLLM's coordinator publishes its stats to the API servers (policy vllm-lb)
  sample,         // "replicas busy" and live sessions are sampled
  timeline_mark,  // a timeline interval ends
  turns_due,      // sessions' next turns are due: their requests are sent
  head_deadline,  // the held head's deadline: held requests are routed again
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

// The requests admission holds, by request id, in model seconds.
using HeldRequests = core::HoldQueue<std::uint64_t, double>;

struct Flight {
  std::size_t slot = 0;
  std::uint32_t replica = 0;
  std::uint32_t api_server = 0;  // vllm-lb: the vLLM API server that routed it
  double started = 0;            // client send time
  std::size_t turn = 0;
  std::string route;
  engine::Tokens prompt;  // until handed to the engine
  engine::Tokens reply;
  std::optional<double> ttfb;
  std::uint32_t prompt_tokens_estimate = 0;
  std::uint64_t session_hash = 0;  // the thread's key (the session's own for its main thread)
  std::uint64_t thread_session = 0;
  std::uint64_t first_message = 0;  // a digest of its conversation's first message (as the gateway's)
  protocol::PromptStart start;      // of its thread's system prompt and tools
  bool failed = false;
  double arrived = 0;  // at the warden
  core::Decision decision;
  std::uint32_t warden = 0;  // the warden the request reached (a load balancer in front picks one)
  // The expected cached tokens (decision) came within a block of what the engine reported at its first
  // token (Router policies only).
  std::optional<bool> expected_cached_ok;
  bool awaiting_first = false;  // routed by the Router, no first token yet (its prefill is in the backlog)
  bool task_start = false;      // is_task_start() of its conversation when sent
  std::int64_t priority = 0;    // vLLM's request priority (priority policies)
  // Policy `ceiling`: the prompt tokens the engine counts as cached, and the prompt as sent.
  std::uint32_t assume_cached = 0;
  engine::Tokens sent;
};

class Driver {
 public:
  Driver(const SimulationConfig& config, const Hooks& hooks)
      : config_(config),
        hooks_(hooks),
        workload_(config.workload),
        rng_(base::splitmix64(config.seed ^ 0x5157A7E)),
        jitter_rng_(base::splitmix64(config.seed ^ 0x7417E7)),
        warden_rng_(base::splitmix64(config.seed ^ 0x3A7D3)) {}

  Result<Outcome> run() {
    for (std::size_t p = 0; p < config_.policies.size(); ++p) {
      const bool by_priority = is_priority(config_.policies[p]);
      // Engines are carried over (warm_start) only while their scheduling policy stays the same.
      if (p == 0 || !config_.warm_start || by_priority != is_priority(config_.policies[p - 1])) {
        make_engines(by_priority);
      }
      auto ok = run_policy(config_.policies[p]);
      if (!ok) {
        return ok.error();
      }
    }
    outcome_.model_seconds = now_;
    return std::move(outcome_);
  }

 private:
  void make_engines(bool by_priority) {
    engine::EngineConfig engine = engine_config(config_);
    engine.kv_events = config_.kv_events;
    if (by_priority) {
      engine.scheduling_policy = engine::SchedulingPolicy::priority;
    }
    engines_.clear();
    engine_config_ = engine;
    generation_.assign(config_.replicas, 0);
    pending_.assign(config_.replicas, false);
    step_events_.assign(config_.replicas, {});
    for (std::uint32_t r = 0; r < config_.replicas; ++r) {
      // One seed for every rank: a prompt gets the same reply wherever it runs, so both policies of a
      // comparison replay the same conversations.
      engines_.emplace_back(engine, config_.seed);
    }
    scraped_.assign(config_.replicas, core::ReplicaMetrics{});
    kv_.reset();
    step_kv_.assign(config_.replicas, {});
    if (config_.kv_events) {
      kv_.emplace(config_.replicas);
      kv_->attach(scraped_);
    }
    rates_.assign(config_.replicas, core::PrefillRate{});
    scrape();
  }

  Result<void> run_policy(const std::string& policy) {
    policy_ = policy;
    vllm_model_ = is_vllm_model(policy);
    balancer_.emplace(config_.replicas, config_.vllm_api_servers, config_.routing.vllm_balancer);
    publish();
    admission_policy_ = is_admission(policy);
    ceiling_ = policy == "ceiling";
    task_policy_ = holds_task_starts(policy);
    priority_policy_ = is_priority(policy);
    task_starts_.clear();
    slots_.reset();
    if (policy == "task-slots") {
      slots_.emplace(config_.task_slots);
    }
    core::RoutingConfig routing = config_.routing;
    routing.affinity = policy == "affinity" || admission_policy_ || priority_policy_ || slots_;
    routing.policy = core_policy(policy);
    routing.max_num_seqs = config_.engine.max_num_seqs;
    // The other affinity policies are each their own rule of admission, measured without the default's.
    routing.task_admission.enabled = routing.task_admission.enabled && policy == "affinity";
    if (admission_policy_) {
      routing.admission.enabled = true;
      routing.admission.hold_task_starts = task_policy_;
    } else {
      routing.admission = {};
    }
    core::SessionTableConfig sessions = config_.sessions;
    if (admission_policy_) {
      sessions.adaptive_gap_factor = config_.admission_gap_factor;
      sessions.min_active_window = to_time(config_.admission_min_window);
    }
    // One Router per warden (SimulationConfig::wardens): no shared state between them.
    routers_.clear();
    for (std::uint32_t w = 0; w < std::max<std::uint32_t>(1, config_.wardens); ++w) {
      auto router = core::Router::make(core::router_config(routing, sessions));
      if (!router) {
        return base::Failure{router.error()};
      }
      routers_.push_back(std::move(*router));
    }
    held_ = HeldRequests(hold_rules());
    for (std::size_t i = 0; i < config_.levels.size(); ++i) {
      auto ok = run_level(config_.levels[i], i);
      if (!ok) {
        return ok;
      }
    }
    return {};
  }

  // The level's loop: the previous level's grown to `n` sessions (carry_over), else a new one. Returns the
  // sessions the previous level had started (0 for a new loop).
  std::uint64_t start_loop(std::size_t n, std::size_t level_index) {
    if (level_index > 0 && config_.carry_over && loop_) {
      const std::uint64_t carried = loop_->sessions_started();
      if (loop_->grow(n, now_)) {
        prompts_.resize(loop_->slots());
        sequences_.resize(ceiling_ ? loop_->slots() : 0);
        return carried;
      }
    }
    loop_ = workload::make_loop(workload_, n, now_, level_index * kLevelStride);
    prompts_.assign(loop_->slots(), IncrementalPrompt{});
    sequences_.assign(ceiling_ ? loop_->slots() : 0, engine::Tokens{});
    return 0;
  }

  Result<void> run_level(int sessions, std::size_t level_index) {
    Level level = begin_level(sessions, level_index);
    while (level.open || (!level.carried_on && !flights_.empty())) {
      const auto [t, next] = next_event(level);
      if (t == kInf) {
        return std::string("what-if driver stalled: requests in flight but nothing scheduled");
      }
      now_ = t;
      auto ok = happen(next, level);
      if (!ok) {
        return ok;
      }
    }
    end_level(level);
    return {};
  }

  // Opens the level's loop, its window and its clocks at now_.
  Level begin_level(int sessions, std::size_t level_index) {
    Level level;
    level.carried_sessions = start_loop(static_cast<std::size_t>(sessions), level_index);
    level.carried_on = config_.carry_over && level_index + 1 < config_.levels.size();
    recorder_.emplace(policy_, sessions);
    stats_ = LevelStats{};
    stats_.policy = policy_;
    stats_.sessions = sessions;
    stats_.begin = now_;
    stats_.min_live_sessions = std::numeric_limits<std::uint32_t>::max();
    stats_.requests_per_replica.assign(config_.replicas, 0);
    level.preempt_start = preemptions();
    recorder_->begin(now_);
    level.start = prefix();
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
    consider(next_scrape_, Next::scrape);
    if (vllm_model_) {
      consider(next_publish_, Next::publish);
    }
    if (level.open) {
      consider(level.next_sample, Next::sample);
      consider(level.next_mark, Next::timeline_mark);
    }
    if (const auto due = loop_->next_ready_at()) {
      consider(*due, Next::turns_due);
    }
    consider(head_deadline(), Next::head_deadline);
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
        scrape();
        return retry_held();
      case Next::publish:
        publish();
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
    }
    return {};
  }

  // The measuring window ends: the level's figures are taken, and its loop stops handing out turns (unless
  // its sessions run on into the next level).
  void close_window(Level& level) {
    level.open = false;
    recorder_->end(now_);
    const report::PrefixCounters end = prefix();
    recorder_->set_prefix_end(end);
    if (config_.timeline > 0 && now_ > level.interval.from) {
      mark_interval(level.interval, stats_.begin);
    }
    stats_.prefix_hits = end.hits - level.start.hits;
    stats_.prefix_queries = end.queries - level.start.queries;
    stats_.end = now_;
    if (!level.carried_on) {
      loop_->stop();
    }
  }

  // The level drained (or runs on into the next): its row and stats.
  void end_level(const Level& level) {
    stats_.drained = now_;
    if (!level.carried_on) {
      for (core::Router& router : routers_) {
        router.agents_stopped();  // the level's agents stopped mid-task: their tasks are not under way
      }
    }
    if (!routers_.empty() && config_.workload.agentic.enabled) {
      stats_.task_tokens = routers_.front().view(to_time(now_)).task_tokens;
    }
    stats_.preemptions = preemptions() - level.preempt_start;
    stats_.sessions_started = loop_->sessions_started() - level.carried_sessions;
    outcome_.rows.push_back(recorder_->row());
    outcome_.levels.push_back(stats_);
  }

  void push(double time, Timed::Kind kind, std::uint64_t id) { queue_.push(Timed{time, seq_++, kind, id}); }

  void send_ready() {
    for (const std::size_t slot : loop_->take_ready(now_)) {
      const workload::Conversation& conv = loop_->conversation(slot);
      Flight f;
      f.slot = slot;
      f.started = now_ + (config_.think_jitter > 0 ? config_.think_jitter * jitter_rng_.unit() : 0.0);
      f.turn = conv.turn;
      if (routers_.size() > 1) {
        f.warden = static_cast<std::uint32_t>(warden_rng_.unit() * static_cast<double>(routers_.size())) %
                   static_cast<std::uint32_t>(routers_.size());
      }
      auto prompt = prompts_[slot].render(workload_, conv);
      if (!prompt) {
        f.failed = true;
      } else {
        f.prompt = std::move(*prompt);
      }
      const ThreadKeys keys = thread_keys(conv);
      f.session_hash = keys.thread;
      f.thread_session = keys.session;
      f.first_message = first_message_digest(conv);
      f.start = prompt_start_digest(conv);
      f.task_start = is_task_start(conv);
      if (ceiling_ && !f.task_start) {
        // What the thread's previous request left in a cache that kept everything.
        f.assume_cached = common_prefix(sequences_[slot], f.prompt);
      }
      // What the gateway's inspection estimates from the body's text (prompt bytes / 4).
      const std::size_t bytes = workload_.prompt_chars(conv);
      f.prompt_tokens_estimate = static_cast<std::uint32_t>(std::max<std::size_t>(1, bytes / 4));
      const std::uint64_t id = next_request_id_++;
      const double f_started = f.started;
      flights_.emplace(id, std::move(f));
      if (window_open()) {
        ++stats_.requests;
      }
      stats_.max_in_flight =
          std::max<std::uint32_t>(stats_.max_in_flight, static_cast<std::uint32_t>(flights_.size()));
      push(f_started + config_.client_rtt / 2, Timed::Kind::arrive, id);
    }
  }

  bool window_open() const { return !recorder_->end_time().has_value(); }

  // The keys the gateway derives from X-Claude-Code-Session-Id and X-Claude-Code-Agent-Id, through the same
  // inspection code: a subagent is a thread of its session with a key of its own.
  struct ThreadKeys {
    std::uint64_t thread = 0;
    std::uint64_t session = 0;
  };
  ThreadKeys thread_keys(const workload::Conversation& conv) {
    const std::string id = conv.session_id + '/' + conv.agent_id;
    if (const auto it = thread_keys_.find(id); it != thread_keys_.end()) {
      return it->second;
    }
    std::vector<protocol::HeaderField> headers{{"X-Claude-Code-Session-Id", conv.session_id}};
    if (!conv.agent_id.empty()) {
      headers.push_back({"X-Claude-Code-Agent-Id", conv.agent_id});
    }
    const auto info = protocol::inspect_request(protocol::ApiKind::anthropic_messages,
                                                protocol::HeaderLookup{std::span(headers)},
                                                R"({"model":"m","messages":[]})");
    const ThreadKeys keys = info ? ThreadKeys{info->thread_hash, info->session_hash} : ThreadKeys{};
    thread_keys_.emplace(id, keys);
    return keys;
  }

  // What RequestInfo::first_message_hash is to the gateway: a digest of the conversation's first message
  // (it changes only when a compaction replaces the history), 0 for none.
  static std::uint64_t first_message_digest(const workload::Conversation& conv) {
    if (conv.messages.empty()) {
      return 0;
    }
    const std::string& text = conv.messages.front().text;
    return base::splitmix64(XXH3_64bits(text.data(), text.size()) + conv.compactions);
  }

  // The digest of the prompt's start the gateway takes (protocol::prompt_start(), the billing line left
  // out as a gateway that normalizes prompts does): every main thread of the workload starts with its
  // system prompt and tools, every subagent of one type with that type's.
  protocol::PromptStart prompt_start_digest(const workload::Conversation& conv) {
    const std::string& system = workload_.system_prompt(conv);
    const std::string& tools = workload_.tools_json(conv);
    const auto key = std::make_pair(system.data(), tools.data());
    if (const auto it = start_digests_.find(key); it != start_digests_.end()) {
      return it->second;
    }
    boost::json::object request{{"model", "m"}, {"system", system}};
    if (!tools.empty()) {
      boost::system::error_code ec;
      request["tools"] = boost::json::parse(tools, ec);
    }
    const std::string body = boost::json::serialize(request);
    const auto layout = protocol::scan_layout(body);
    const protocol::PromptStart digest =
        layout ? protocol::prompt_start(body, *layout, false) : protocol::PromptStart{};
    start_digests_.emplace(key, digest);
    return digest;
  }

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
        if (ev.id >> 32U == generation_[ev.id & 0xffffffffU]) {  // else a step of an engine since restarted
          step_done(static_cast<std::uint32_t>(ev.id & 0xffffffffU));
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
    f.arrived = now_;
    if (priority_policy_) {
      f.priority = task_priority(f);
    }
    if (f.failed) {
      push(now_ + config_.client_rtt / 2, Timed::Kind::client_done, id);
      return {};
    }
    if (vllm_model_) {
      route_vllm(f);
      dispatch(id);
      return {};
    }
    if (slots_ && f.task_start) {
      slots_->task_starting(f.thread_session, to_time(now_));
    }
    // First come, first served: a new conversation (policy task-slots: a task start) does not overtake the
    // held ones.
    const bool queues =
        slots_ ? f.task_start
               : (task_policy_ && f.task_start) || !router(f).home_of(f.session_hash, to_time(now_));
    if (held_.waits_behind(queues)) {
      hold(id);
      return {};
    }
    auto routed = route_request(id, core::Time{0});
    if (!routed) {
      return routed.error();
    }
    if (!*routed) {
      hold(id);
      return {};
    }
    dispatch(id);
    return {};
  }

  // vLLM's `priority` as the warden would set it: when its task started, in milliseconds (earlier first),
  // the task being the last task start seen on the request's session (subagents share their session's).
  std::int64_t task_priority(const Flight& f) {
    if (config_.task_priority == SimulationConfig::TaskPriority::stage) {
      return f.task_start ? 1 : 0;
    }
    const auto it = task_starts_.try_emplace(f.session_hash, now_).first;
    if (f.task_start) {
      it->second = now_;
    }
    return std::llround(it->second * 1000.0);
  }

  void route_vllm(Flight& f) {
    const core::BalancerPick pick = balancer_->route(rng_);
    f.replica = pick.rank;
    f.api_server = pick.server;
    f.route = "balanced";
    ++stats_.routes[static_cast<std::size_t>(core::Route::balanced)];
    if (hooks_.on_decision) {
      DecisionTrace trace;
      trace.time = now_;
      trace.policy = policy_;
      trace.sessions = stats_.sessions;
      trace.decision = core::Decision{f.replica, core::Route::balanced, core::NoReplicaReason::none};
      trace.live = live_loads();
      hooks_.on_decision(trace);
    }
  }

  // What the gateway knows of a request when it routes it.
  core::RequestFacts request_facts(const Flight& f) const {
    core::RequestFacts facts;
    facts.session = core::SessionKey{f.session_hash};
    facts.thread.session = f.thread_session;
    facts.first_message = f.first_message;
    facts.thread.start = f.start.hash;
    facts.thread.long_start = f.start.bytes >= protocol::kPromptStartBytes;
    facts.prompt_tokens = f.prompt_tokens_estimate;
    facts.offers_tools = config_.workload.agentic.enabled;  // every agentic request offers its tools
    facts.task_start = f.task_start;
    return facts;
  }

  // Routes a request that has waited `waited` through the Router: true when it has a replica, false when
  // admission holds it.
  Result<bool> route_request(std::uint64_t id, core::Time waited) {
    Flight& f = flights_.at(id);
    core::RequestFacts facts = request_facts(f);
    facts.queued_for = waited;
    if (slots_ && f.task_start && facts.queued_for < slots_->config().max_wait) {
      facts.task_room = slots_->room(router(f).snapshot(scraped_, to_time(now_)).replicas,
                                     f.prompt_tokens_estimate, to_time(now_));
    }
    std::optional<core::Snapshot> seen;
    if (hooks_.on_decision) {
      seen = router(f).snapshot(scraped_, to_time(now_));
    }
    const core::Decision d = router(f).route(facts, scraped_, to_time(now_), rng_);
    if (hooks_.on_decision) {
      DecisionTrace trace;
      trace.time = now_;
      trace.policy = policy_;
      trace.sessions = stats_.sessions;
      trace.snapshot = std::move(*seen);
      trace.decision = d;
      trace.live = live_loads();
      hooks_.on_decision(trace);
    }
    if (d.queued()) {
      return false;
    }
    if (!d.ok()) {
      return fmt::format("no replica for a request: {}", core::no_replica_reason_name(d.reason));
    }
    f.replica = *d.replica;
    f.decision = d;
    if (slots_) {
      slots_->routed(f.thread_session, f.replica, f.task_start, f.prompt_tokens_estimate, to_time(now_));
    }
    f.awaiting_first = true;
    f.route = std::string(core::route_name(d.route));
    ++stats_.routes[static_cast<std::size_t>(d.route)];
    return true;
  }

  // The hold queue's rules (core::HoldQueue) under the policy's routing, as the gateway configures them,
  // with this run's max_queue (the Routers of the policies without admission have none) and, under policy
  // task-slots, the longer of the slots' bound and the Router's: at the shorter one the other rule may
  // still hold the head.
  core::HoldRules hold_rules() const {
    core::HoldRules rules = core::hold_rules(routers_.front().routing_config());
    rules.max_queue = config_.routing.admission.max_queue;
    if (slots_) {
      rules.longest = std::max(slots_->config().max_wait, rules.longest);
    }
    return rules;
  }

  // Admission held the request: into the queue, or refused (the gateway's 503) when it is full.
  void hold(std::uint64_t id) {
    Flight& f = flights_.at(id);
    if (!held_.join(id, request_facts(f), now_)) {
      f.failed = true;
      ++stats_.refused;
      push(now_ + config_.client_rtt / 2, Timed::Kind::client_done, id);
      return;
    }
    ++stats_.held;
    stats_.max_held = std::max<std::uint32_t>(stats_.max_held, static_cast<std::uint32_t>(held_.size()));
  }

  // Routes the held requests again (a round of the hold queue); each that goes is dispatched at once.
  Result<void> retry_held() {
    std::optional<std::string> failed;
    held_.retry(now_, [&](std::uint64_t id, core::Time waited) {
      auto routed = route_request(id, waited);
      if (!routed) {
        failed = routed.error();
        return core::Retried::stop;
      }
      if (!*routed) {
        return core::Retried::held;
      }
      stats_.held_seconds += now_ - flights_.at(id).arrived;
      dispatch(id);
      return core::Retried::went;
    });
    if (failed) {
      return *failed;
    }
    return {};
  }

  // When the head of the held requests reaches its deadline (admitted over capacity then): a nanosecond
  // late, so that the wait the Router sees is never rounded below the bound.
  double head_deadline() const {
    const std::optional<double> at = held_.deadline();
    return at ? std::max(now_, *at + 1e-9) : kInf;
  }

  // Hands a routed request to its replica's engine.
  void dispatch(std::uint64_t id) {
    Flight& f = flights_.at(id);
    const std::uint32_t replica = f.replica;
    ++stats_.requests_per_replica[replica];
    engine::RequestSpec spec;
    spec.id = id;
    spec.prompt = std::move(f.prompt);
    spec.max_tokens = static_cast<int>(workload_.config().max_output);
    spec.arrival_time = now_;
    spec.assume_cached_tokens = f.assume_cached;
    spec.priority = f.priority;
    if (!vllm_model_ && f.decision.thread_key != 0) {
      spec.session_id = protocol::kv::session_id_of(f.decision.thread_key);  // as the gateway sends it
      if (kv_) {
        kv_->sent(replica, f.decision.thread_key, f.decision.thread_anew);
      }
    }
    if (ceiling_) {
      f.sent = spec.prompt;
    }
    auto added = engines_[replica].add_request(std::move(spec));
    if (!added) {
      // Refused like a 400 from vLLM (e.g. prompt longer than max_model_len): the turn fails.
      f.failed = true;
      finish_routing(f);
      push(now_ + config_.client_rtt / 2, Timed::Kind::client_done, id);
      return;
    }
    if (!pending_[replica]) {
      start_step(replica);
    }
  }

  void start_step(std::uint32_t replica) {
    engine::Engine& e = engines_[replica];
    if (!e.has_work()) {
      return;
    }
    engine::StepResult r = e.step(now_);
    ++outcome_.engine_steps;
    if (r.duration <= 0) {
      return;  // nothing schedulable; the next arrival restarts the engine
    }
    pending_[replica] = true;
    step_events_[replica] = std::move(r.events);
    step_kv_[replica] = std::move(r.kv_events);
    push(now_ + r.duration, Timed::Kind::step_done, std::uint64_t{generation_[replica]} << 32U | replica);
  }

  void step_done(std::uint32_t replica) {
    pending_[replica] = false;
    if (kv_) {
      kv_->step(replica, step_kv_[replica], now_);
    }
    std::vector<engine::Event> events = std::move(step_events_[replica]);
    for (const engine::Event& e : events) {
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
        f.ttfb = now_ + config_.client_rtt / 2 - f.started;
        check_expectation(f, e.usage.cached_tokens, replica);
        first_token(f);
      }
      if (e.finished) {
        finish_routing(f);
        push(now_ + config_.client_rtt / 2, Timed::Kind::client_done, e.request);
      }
    }
    start_step(replica);
    if (!held_.empty()) {
      // A request may have finished: room may have freed (after start_step, which must run first).
      auto ok = retry_held();
      if (!ok) {
        error_ = ok.error();
      }
    }
  }

  // The replica's engine restarted (SimulationConfig::restart): its requests fail as a killed engine's
  // connections do (their clients send the turn again), and it comes back with an empty cache, its
  // counters and its KV events' seq from 0.
  void restart(std::uint32_t replica) {
    engine::Engine& old = engines_[replica];
    std::vector<engine::RequestId> lost = old.running_ids();
    const std::vector<engine::RequestId> waiting = old.waiting_ids();
    lost.insert(lost.end(), waiting.begin(), waiting.end());
    engines_[replica] = engine::Engine(engine_config_, config_.seed);
    ++generation_[replica];
    pending_[replica] = false;
    step_events_[replica].clear();
    step_kv_[replica].clear();
    if (kv_) {
      kv_->restarted(replica);
    }
    for (const engine::RequestId id : lost) {
      if (const auto it = flights_.find(id); it != flights_.end()) {
        it->second.failed = true;
        finish_routing(it->second);
        push(now_ + config_.client_rtt / 2, Timed::Kind::client_done, id);
      }
    }
  }

  // What the Router expected the chosen replica to serve from cache, against what its engine reported.
  void check_expectation(Flight& f, std::uint32_t reported, std::uint32_t replica) const {
    if (vllm_model_ || !f.awaiting_first) {
      return;
    }
    const auto expected = static_cast<std::int64_t>(f.decision.expected_cached_tokens);
    const auto block = static_cast<std::int64_t>(engines_[replica].config().block_size);
    f.expected_cached_ok = std::abs(expected - static_cast<std::int64_t>(reported)) <= block;
  }

  void first_token(Flight& f) {
    if (f.awaiting_first) {
      router(f).first_token(f.decision);
      f.awaiting_first = false;
    }
  }

  void finish_routing(Flight& f) {
    if (slots_) {
      slots_->finished(f.thread_session, to_time(now_));
    }
    if (vllm_model_) {
      balancer_->finish(f.api_server, f.replica);
    } else {
      first_token(f);
      router(f).finish(f.replica);
    }
  }

  // The reply reached the client: a subagent's final text ends its thread in the Router (Router::answered),
  // as the gateway sees it from the reply's stop reason.
  void answered(const Flight& f, bool final_text) {
    if (vllm_model_) {
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

  void client_done(std::uint64_t id) {
    auto node = flights_.extract(id);
    Flight& f = node.mapped();
    report::RequestRecord rec;
    rec.started_at = f.started;
    rec.ended_at = now_;
    rec.ttfb = f.ttfb;
    rec.turn = f.turn;
    rec.route = f.route;
    rec.expected_cached_ok = f.expected_cached_ok;
    if (f.failed) {
      rec.ok = false;
      loop_->fail(f.slot, now_, 0.0);
    } else {
      rec.output_tokens = static_cast<std::int64_t>(f.reply.size());
      if (ceiling_) {
        f.sent.insert(f.sent.end(), f.reply.begin(), f.reply.end());
        sequences_[f.slot] = std::move(f.sent);
      }
      const workload::TurnEnd end = loop_->complete(f.slot, now_, engine::detokenize(f.reply));
      answered(f, end.final_text);
      rec.session_finished = end.session_finished;
      if (end.task_finished) {
        rec.task_started_at = end.task_started_at;
        ++interval_tasks_;
      }
    }
    ++interval_requests_;
    recorder_->record(rec);
  }

  std::vector<RankLoad> live_loads() const {
    std::vector<RankLoad> out;
    for (const auto& e : engines_) {
      const engine::Metrics m = e.metrics();
      out.push_back(RankLoad{m.num_waiting, m.num_running, m.kv_cache_usage});
    }
    return out;
  }

  void scrape() {
    for (std::uint32_t r = 0; r < engines_.size(); ++r) {
      const engine::Metrics m = engines_[r].metrics();
      core::ReplicaMetrics& s = scraped_[r];
      s.healthy = true;
      // What `serve` reads from the replica's /metrics, through the same function.
      core::observe_report(s, rates_[r], engine_report(m), to_time(now_));
      ++s.scrape_generation;
    }
    if (hooks_.on_scrape) {
      hooks_.on_scrape(now_, scraped_);
    }
    next_scrape_ = now_ + config_.scrape_interval;
  }

  void publish() {
    if (balancer_) {
      const std::vector<RankLoad> loads = live_loads();
      balancer_->publish(loads);
    }
    next_publish_ = now_ + config_.vllm_publish_interval;
  }

  void sample() {
    int busy = 0;
    for (const auto& e : engines_) {
      busy += e.metrics().num_running > 0 ? 1 : 0;
    }
    recorder_->add_busy_sample(busy);
    // Sessions in flight or thinking: every session has a main thread (its other threads are subagents).
    std::uint32_t live = 0;
    for (std::size_t s = 0; s < loop_->slots(); ++s) {
      const workload::Conversation& c = loop_->conversation(s);
      live += c.messages.empty() || !c.agent_id.empty() ? 0 : 1;
    }
    stats_.max_live_sessions = std::max(stats_.max_live_sessions, live);
    stats_.min_live_sessions = std::min(stats_.min_live_sessions, live);
  }

  // Closes the timeline interval under way at now_ and opens the next.
  void mark_interval(Interval& interval, double level_begin) {
    const report::PrefixCounters now_counters = prefix();
    report::TimelinePoint p;
    p.policy = policy_;
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

  report::PrefixCounters prefix() const {
    report::PrefixCounters c;
    for (const auto& e : engines_) {
      const engine::Metrics m = e.metrics();
      // Tokens loaded from the offload tier are served from cache too (vLLM's cached_tokens counts them).
      c.hits += static_cast<double>(m.all_prefix_hits());
      c.queries += static_cast<double>(m.prefix_cache_queries_total);
    }
    return c;
  }

  std::uint64_t preemptions() const {
    std::uint64_t n = 0;
    for (const auto& e : engines_) {
      n += e.metrics().num_preemptions_total;
    }
    return n;
  }

  // The Router of the warden the request reached.
  core::Router& router(const Flight& f) { return routers_[f.warden]; }

  const SimulationConfig& config_;
  const Hooks& hooks_;
  workload::Workload workload_;
  core::SplitMixRng rng_;
  core::SplitMixRng jitter_rng_;
  double now_ = 0;
  std::vector<engine::Engine> engines_;
  std::vector<bool> pending_;
  std::vector<std::uint32_t> generation_;  // per replica: engines restarted so far
  engine::EngineConfig engine_config_;
  std::vector<std::vector<engine::Event>> step_events_;
  std::vector<std::vector<engine::KvEvent>> step_kv_;
  std::optional<KvSense> kv_;  // the engines' KV cache events, with SimulationConfig::kv_events
  std::vector<core::ReplicaMetrics> scraped_;
  std::vector<core::PrefillRate> rates_;
  double next_scrape_ = 0;
  std::uint64_t interval_tasks_ = 0;     // tasks finished in the timeline interval under way
  std::uint64_t interval_requests_ = 0;  // requests ended in it
  double next_publish_ = 0;
  std::string policy_;
  bool vllm_model_ = false;
  bool admission_policy_ = false;
  bool ceiling_ = false;
  // Policies `tasks` and `tasks-priority`: task starts are held too, each until its own home has room.
  bool task_policy_ = false;
  // Policies `priority` and `tasks-priority`: engines schedule by priority, each request's being the start
  // of its session's current task (task_priority()), as the warden sets it when they arrive.
  bool priority_policy_ = false;
  std::unordered_map<std::uint64_t, double> task_starts_;
  // Policy `task-slots`: the tasks under way per replica (core/task_slots.hpp), as the gateway would count
  // them from the requests it sees.
  std::optional<core::TaskSlots> slots_;
  // Policy `ceiling`: each slot's last request as the engine saw it, prompt and reply.
  std::vector<engine::Tokens> sequences_;
  // The requests admission holds (by request id, since their arrival in model seconds), as the gateway
  // keeps them.
  HeldRequests held_;
  std::string error_;  // an error raised inside an engine step, reported by the level loop
  std::optional<VllmBalancer> balancer_;
  std::vector<core::Router> routers_;  // one per warden
  core::SplitMixRng warden_rng_;       // which warden a request reaches (wardens > 1)
  std::unique_ptr<workload::Loop> loop_;
  std::optional<report::LevelRecorder> recorder_;
  std::vector<IncrementalPrompt> prompts_;
  std::unordered_map<std::uint64_t, Flight> flights_;
  std::unordered_map<std::string, ThreadKeys> thread_keys_;
  std::map<std::pair<const char*, const char*>, protocol::PromptStart> start_digests_;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  std::uint64_t next_request_id_ = 1;
  LevelStats stats_;
  Outcome outcome_;
};

}  // namespace

std::vector<std::string> simulate_policy_names() {
  std::vector<std::string> names{"vllm-lb", "warden-lb", "admission",      "tasks",
                                 "ceiling", "priority",  "tasks-priority", "task-slots"};
  for (const std::string_view n : core::policy_names()) {
    if (n != "vllm-lb") {
      names.emplace_back(n);
    }
  }
  return names;
}

engine::EngineConfig engine_config(const SimulationConfig& config) {
  engine::EngineConfig c = config.engine;
  c.reply = config.replies;
  return c;
}

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
  const core::AdmissionConfig& a = config.routing.admission;
  if (!(a.low_water > 0) || !(a.high_water >= a.low_water) || !std::isfinite(a.high_water) ||
      a.max_wait < core::Time{0}) {
    return std::string("admission: water marks need 0 < low <= high, max wait >= 0");
  }
  const core::TaskSlotsConfig& t = config.task_slots;
  if (!(t.fill >= 0) || !std::isfinite(t.fill) || t.quiet < core::Time{0} || t.max_wait < core::Time{0}) {
    return std::string("task slots: fill >= 0, quiet and max wait >= 0");
  }
  if (config.carry_over && config.workload.agentic.enabled) {
    return std::string("carry-over: the agentic workload runs new agents at each level");
  }
  if (config.carry_over && !std::is_sorted(config.levels.begin(), config.levels.end())) {
    return std::string("carry-over: levels must not shrink (sessions are carried to the next level)");
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
  Driver driver(config, hooks);
  return driver.run();
}

}  // namespace warden::whatif
