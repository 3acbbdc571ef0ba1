#include "core/router.hpp"

#include <algorithm>
#include <cmath>

#include "core/cost_spill.hpp"
#include "core/decide.hpp"
#include "core/task_admission.hpp"

namespace warden::core {

namespace {

// routing.threads off: every thread of a session is the session itself (one home for all of them), and no
// prompt start is remembered or preferred, so a new conversation is placed by load alone. A side request
// stays one.
RequestFacts session_only(RequestFacts facts) {
  if (facts.session && facts.thread.session != 0) {
    facts.session = SessionKey{facts.thread.session};
  }
  facts.thread = ThreadFacts{.side = facts.thread.side};
  return facts;
}

// The main thread of a session whose id is shared keyed by the id and its first message (shared_ids.hpp):
// `key(id, first)` gives the key.
template <class Key>
RequestFacts keyed_by_conversation(RequestFacts facts, Key&& key) {
  const bool main_thread =
      facts.session && (facts.thread.session == 0 || facts.thread.session == facts.session->hash);
  if (!main_thread || facts.thread.side || facts.first_message == 0) {
    return facts;
  }
  const std::uint64_t conversation = key(facts.session->hash, facts.first_message);
  if (conversation != facts.session->hash) {
    facts.session = SessionKey{conversation};
    facts.thread.session = conversation;
  }
  return facts;
}

}  // namespace

RouterConfig router_config(const RoutingConfig& routing, const SessionTableConfig& sessions) {
  RouterConfig config{routing, sessions};
  config.routing.max_num_seqs = std::max<std::uint32_t>(1, routing.max_num_seqs);
  return config;
}

Router::Router(RouterConfig config, std::unique_ptr<Policy> policy)
    : routing_(std::move(config.routing)),
      sessions_(config.sessions),
      policy_(std::move(policy)),
      shared_ids_(SharedIdsConfig{config.sessions.max_entries, config.sessions.idle_ttl}) {}

Router::Router() : Router(RouterConfig{}, make_policy(RoutingConfig{}.policy)) {}

base::Result<Router> Router::make(RouterConfig config) {
  auto policy = make_policy(config.routing.policy);
  if (!policy) {
    return base::Failure{"unknown routing policy: " + config.routing.policy};
  }
  return Router(std::move(config), std::move(policy));
}

void Router::build_snapshot(std::span<const ReplicaMetrics> metrics, Time now) {
  sessions_.expire(now);
  tasks_.expire(now, sessions_.config().active_window, kept_room());
  const std::size_t count = metrics.size();
  counters_.ensure(count);
  if (sent_since_scrape_.size() < count) {
    sent_since_scrape_.resize(count, 0);
    scrape_generation_.resize(count, 0);
    prefill_backlog_.resize(count, 0);
  }
  snapshot_.routing = routing_;
  snapshot_.admission_holding = admission_holding_;
  snapshot_.task_tokens = task_tokens_;
  snapshot_.replicas.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const ReplicaMetrics& m = metrics[i];
    if (m.scrape_generation != scrape_generation_[i]) {
      scrape_generation_[i] = m.scrape_generation;
      sent_since_scrape_[i] = 0;
    }
    const ReplicaSessions held = sessions_.replica(static_cast<ReplicaIndex>(i));
    ReplicaState& state = snapshot_.replicas[i];
    static_cast<ReplicaFigures&>(state) = m;  // the engine's figures, whichever they are
    // A scraped value is untrusted: NaN or out-of-range usage must not poison the comparison.
    state.kv_usage = std::isfinite(m.kv_usage) ? std::clamp(m.kv_usage, 0.0, 1.0) : 0.0;
    state.prefill_tokens_per_second =
        std::isfinite(m.prefill_tokens_per_second) ? std::max(0.0, m.prefill_tokens_per_second) : 0.0;
    state.healthy = m.healthy;
    state.in_flight = counters_.replicas()[i].in_flight;
    state.sent_since_scrape = sent_since_scrape_[i];
    state.active_conversations = held.active_conversations;
    state.held_tokens = held.held_tokens;
    state.peer_in_flight = m.peer_in_flight;
    state.peer_active_conversations = m.peer_active_conversations;
    state.peer_held_tokens = m.peer_held_tokens;
    state.peer_wardens = m.peer_wardens;
    state.prefill_backlog_tokens = prefill_backlog_[i];
    state.tasks_under_way = tasks_.on(static_cast<ReplicaIndex>(i));
    state.tasks_tokens = tasks_.tokens_on(static_cast<ReplicaIndex>(i));
    state.tasks_reach_tokens = 0;
  }
  note_reach();
}

void Router::note_reach() {
  const TaskPacking packing = routing_.task_admission.packing;
  snapshot_.task_growth = growth_.mean();
  snapshot_.task_start_tokens = task_start_;
  if (packing == TaskPacking::mean || !growth_.known()) {
    return;
  }
  reach_.assign(snapshot_.replicas.size(), 0.0);
  if (packing == TaskPacking::growth || packing == TaskPacking::shared) {
    tasks_.project(reach_, [this](double grown) { return growth_.left(grown); });
  } else {
    const double mean = growth_.mean();
    tasks_.project(reach_, [mean](double grown) { return std::max(0.0, mean - std::max(0.0, grown)); });
  }
  for (std::size_t i = 0; i < reach_.size(); ++i) {
    snapshot_.replicas[i].tasks_reach_tokens = static_cast<std::uint64_t>(reach_[i]);
  }
}

void Router::commit(const RequestFacts& facts, const Decision& decision,
                    std::span<const ReplicaMetrics> metrics, Time now) {
  const ReplicaIndex chosen = *decision.replica;
  counters_.record(decision);
  if (chosen < sent_since_scrape_.size()) {
    ++sent_since_scrape_[chosen];
  }
  if (!facts.session || facts.thread.side) {
    return;  // a side request belongs to no thread: it moves, places and remembers nothing
  }
  threads_.served(facts, chosen, sessions_, now, decision.thread_key,
                  residency_.witness_holds(facts, chosen, metrics, threads_));
  const std::uint64_t key = facts.session->hash;
  switch (decision.route) {
    case Route::spilled:
      // The request moves, the conversation does not: its cache is at home.
      sessions_.touch(key, facts.prompt_tokens, now);
      break;
    case Route::pinned:
      if (facts.home) {
        sessions_.touch(key, facts.prompt_tokens, now);
      } else {
        sessions_.assign(key, chosen, facts.prompt_tokens, now);
      }
      break;
    case Route::new_conversation:
    case Route::sticky:
    case Route::balanced:
    case Route::failover:
    case Route::rehomed:
      sessions_.assign(key, chosen, facts.prompt_tokens, now);
      if (chosen < metrics.size() && metrics[chosen].computed_known) {
        // This turn's own prefill is not what evicts it later.
        sessions_.mark_computed(key, metrics[chosen].computed_tokens + decision.prefill_tokens);
      }
      break;
    case Route::queued:  // never committed: a queued decision has no replica
      break;
  }
}

Decision Router::route(RequestFacts facts, std::span<const ReplicaMetrics> metrics, Time now, Rng& rng) {
  facts = conversation_facts(std::move(facts), now);
  if (!routing_.threads) {
    facts = session_only(std::move(facts));
  }
  build_snapshot(metrics, now);
  look_up_home(facts, metrics, now);
  residency_.note(facts, metrics, routing_.policy == "affinity", threads_, snapshot_);
  residency_.use(facts, snapshot_);
  facts.task_under_way = tasks_.under_way(facts);
  facts.room_kept = tasks_.room_kept(facts);
  if (facts.work_class == WorkClass::interactive && starts_new_task(facts)) {
    facts.kept_room_at = tasks_.kept_room_of(facts.tenant);
  }
  Decision decision = policy_->pick(snapshot_, facts, rng);
  note_admission(facts, decision);
  if (!decision.ok()) {
    counters_.record(decision);
    return decision;
  }
  residency_.expect(facts, snapshot_, decision);
  if (*decision.replica < prefill_backlog_.size()) {
    prefill_backlog_[*decision.replica] += decision.prefill_tokens;
  }
  commit(facts, decision, metrics, now);
  if (starts_new_task(facts)) {
    const auto prompt = static_cast<double>(facts.prompt_tokens);
    task_start_ = task_start_ > 0 ? std::min(task_start_, prompt) : prompt;
  }
  tasks_.routed(facts, decision, now);
  return decision;
}

void Router::look_up_home(RequestFacts& facts, std::span<const ReplicaMetrics> metrics, Time now) const {
  facts.home.reset();
  facts.home_cached_tokens = 0;
  facts.home_computed_since.reset();
  facts.preferred = 0;
  if (!facts.session) {
    return;
  }
  if (facts.thread.side) {
    facts.home = threads_.side_home(ThreadHomes::session_of(facts), sessions_, now);
    return;
  }
  if (const auto entry = sessions_.lookup(facts.session->hash, now)) {
    facts.home = entry->home;
    facts.home_cached_tokens = entry->prompt_tokens;
    facts.home_computed_since = computed_since(*entry, metrics);
  } else {
    facts.preferred = threads_.preferred(facts, sessions_, now);
  }
}

std::optional<std::uint64_t> Router::computed_since(const SessionEntry& entry,
                                                    std::span<const ReplicaMetrics> metrics) {
  if (entry.home >= metrics.size() || !metrics[entry.home].computed_known ||
      entry.home_computed_at == SessionEntry::unknown) {
    return std::nullopt;
  }
  // The mark includes this conversation's own prefill as estimated, which may exceed what the engine
  // computed (part of it hit): below the mark nothing is known to have been computed since.
  const std::uint64_t now = metrics[entry.home].computed_tokens;
  return now > entry.home_computed_at ? now - entry.home_computed_at : 0;
}

void Router::note_admission(const RequestFacts& facts, const Decision& decision) {
  if (decision.queued()) {
    admission_holding_ = true;
  } else if ((decision.route == Route::new_conversation ||
              (facts.task_start && routing_.admission.hold_task_starts)) &&
             facts.queued_for < routing_.admission.max_wait) {
    // Admitted within the water mark (past the wait bound it may have been admitted over it).
    admission_holding_ = false;
  }
}

Decision Router::route_uncounted(const RequestFacts& facts, std::span<const ReplicaMetrics> metrics, Time now,
                                 Rng& rng) {
  std::optional<ReplicaIndex> home;
  if (facts.session) {
    if (const auto entry = sessions_.lookup(facts.session->hash, now)) {
      home = entry->home;
    } else {
      home = threads_.side_home(ThreadHomes::session_of(facts), sessions_, now);
    }
  }
  if (facts.pin) {
    return Decision{facts.pin, Route::pinned, NoReplicaReason::none};
  }
  if (home && *home < metrics.size() && metrics[*home].healthy) {
    return Decision{home, Route::sticky, NoReplicaReason::none};
  }
  build_snapshot(metrics, now);
  return decide_balanced(snapshot_, RequestFacts{}, rng);
}

RequestFacts Router::conversation_facts(RequestFacts facts, std::optional<Time> note_at) {
  // The baselines model other routers, which key by the id as sent.
  if (routing_.policy != "affinity") {
    return facts;
  }
  if (note_at) {
    return keyed_by_conversation(std::move(facts), [this, note_at](std::uint64_t id, std::uint64_t first) {
      return shared_ids_.key(id, first, *note_at);
    });
  }
  return keyed_by_conversation(std::move(facts), [this](std::uint64_t id, std::uint64_t first) {
    return shared_ids_.key_of(id, first);
  });
}

void Router::finish(ReplicaIndex replica) {
  counters_.finish(replica);
}

void Router::answered(const RequestFacts& request, bool final_text) {
  const RequestFacts facts = conversation_facts(request, std::nullopt);
  const bool subagent =
      facts.session && facts.thread.session != 0 && facts.thread.session != facts.session->hash;
  // A main thread's final text ends its task: its prompt is as large as the task grew.
  if (final_text && facts.session && !subagent && facts.offers_tools && !facts.thread.side) {
    task_tokens_ = next_task_tokens(task_tokens_, facts.prompt_tokens);
    if (const auto first = tasks_.first_prompt(facts)) {
      growth_.ended(facts.prompt_tokens > *first ? facts.prompt_tokens - *first : 0);
    }
  }
  tasks_.answered(facts, final_text, kept_room() > Time{0});
  if (routing_.threads && final_text && subagent && !facts.thread.side) {
    sessions_.end(facts.session->hash);
  }
}

void Router::left_unanswered(const RequestFacts& request) {
  tasks_.left_unanswered(conversation_facts(request, std::nullopt));
}

void Router::first_token(const Decision& decision) {
  drop_prefill(decision);
}

void Router::drop_prefill(const Decision& decision) {
  if (decision.replica && *decision.replica < prefill_backlog_.size()) {
    std::uint64_t& backlog = prefill_backlog_[*decision.replica];
    backlog -= std::min<std::uint64_t>(backlog, decision.prefill_tokens);
  }
}

void Router::abandon(const Decision& decision) {
  drop_prefill(decision);
  if (decision.replica) {
    counters_.finish(*decision.replica);
  }
  counters_.retract(decision);
}

bool Router::set_routing(RoutingConfig routing) {
  if (routing.policy != routing_.policy) {
    auto policy = make_policy(routing.policy);
    if (!policy) {
      return false;
    }
    policy_ = std::move(policy);  // a policy keeps its state (round-robin's turn) while its name stays
  }
  routing.max_num_seqs = std::max<std::uint32_t>(1, routing.max_num_seqs);
  routing_ = std::move(routing);
  return true;
}

void Router::set_session_config(const SessionTableConfig& config) {
  sessions_.reconfigure(config);
}

RoutingConfig Router::routing_config() const {
  return routing_;
}

Snapshot Router::snapshot(std::span<const ReplicaMetrics> metrics, Time now) {
  build_snapshot(metrics, now);
  return snapshot_;
}

RouterView Router::view(Time now) {
  sessions_.expire(now);
  RouterView out;
  out.routing = routing_;
  out.spill_threshold = routing_.spill_threshold.resolve(std::max<std::uint32_t>(1, routing_.max_num_seqs));
  out.spill_label = routing_.spill_threshold.label(std::max<std::uint32_t>(1, routing_.max_num_seqs));
  out.counters = counters_.replicas();
  out.sessions = sessions_.replicas(out.counters.size());
  out.totals = counters_.totals();
  out.sticky_percent = counters_.sticky_percent();
  out.unrouted = counters_.unrouted();
  out.queued = counters_.queued();
  out.admission_holding = admission_holding_;
  out.task_tokens = task_tokens_;
  tasks_.expire(now, sessions_.config().active_window, kept_room());
  for (std::size_t i = 0; i < out.counters.size(); ++i) {
    out.tasks_under_way.push_back(tasks_.on(static_cast<ReplicaIndex>(i)));
  }
  out.prefill_backlog_tokens = prefill_backlog_;
  out.live_sessions = sessions_.size();
  out.threaded_sessions = threads_.sessions();
  out.threads = threads_.threads();
  return out;
}

std::optional<ReplicaIndex> Router::home_of(std::uint64_t session_hash, Time now) const {
  if (const auto entry = sessions_.lookup(session_hash, now)) {
    return entry->home;
  }
  return std::nullopt;
}

std::vector<SessionRecord> Router::export_sessions(Time now) const {
  return sessions_.export_entries(now);
}

void Router::import_sessions(std::span<const SessionRecord> entries, Time now) {
  sessions_.import_entries(entries, now);
}

void Router::learn_home(std::uint64_t session_hash, ReplicaIndex home, std::uint32_t prompt_tokens,
                        Time now) {
  sessions_.learn(session_hash, home, prompt_tokens, now);
}

bool Router::seen_elsewhere(std::uint64_t session_hash, ReplicaIndex home, std::uint64_t computed_at,
                            Time now) {
  return sessions_.seen_elsewhere(session_hash, home, computed_at, now);
}

void Router::adopt_home(std::uint64_t session_hash, ReplicaIndex home, std::uint32_t prompt_tokens,
                        Time now) {
  sessions_.assign(session_hash, home, prompt_tokens, now);
}

void Router::track_session_changes(bool on) {
  sessions_.track_changes(on);
}

SessionChanges Router::take_session_changes() {
  return sessions_.take_changes();
}

SessionTableConfig Router::session_config() const {
  return sessions_.config();
}

std::vector<SessionThreadsView> Router::threaded_sessions(std::size_t limit, Time now,
                                                          std::size_t offset) const {
  return threads_.recent(sessions_, limit, offset, now);
}

}  // namespace warden::core
