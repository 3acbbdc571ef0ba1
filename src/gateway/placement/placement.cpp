// A request's placement (placement.hpp): route, hold, take the decision, report the outcome.
#include "gateway/placement/placement.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "protocol/task_start.hpp"

namespace warden::gateway {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kShuttingDown = "The server is shutting down; retry on another instance";

core::Time steady_now() {
  return Clock::now().time_since_epoch();
}

}  // namespace

core::RequestFacts request_facts(const protocol::RequestInfo& info) {
  core::RequestFacts facts;
  if (info.session_source != protocol::SessionSource::none) {
    facts.session = core::SessionKey{info.thread_hash};
    facts.thread.session = info.session_hash;
    facts.thread.parent = info.parent_hash;
    facts.first_message = info.first_message_hash;
  }
  if (info.pin.state == protocol::PinState::valid) {
    facts.pin = static_cast<core::ReplicaIndex>(info.pin.replica);
  }
  facts.prompt_tokens =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(info.prompt_tokens_estimate, 1u << 30));
  facts.offers_tools = info.offers_tools;
  return facts;
}

void Placement::prepare(ModelRuntime& model, protocol::ApiKind api, const protocol::RequestInfo& info,
                        std::string_view body, bool counting_only, const core::ClientFacts& client) {
  model_ = &model;
  counted_ = !counting_only;
  facts_ = request_facts(info);
  core::apply_client(client, facts_);
  rec_.work_class = std::string(core::work_class_name(client.work_class));
  rec_.tenant = client.tenant_name;
  const bool session = info.session_source != protocol::SessionSource::none;
  // Asked only where task admission may: a main thread's turn with tools (its last message parsed alone).
  facts_.task_start =
      info.offers_tools && session && info.thread_id.empty() && protocol::starts_task(api, body, info.layout);
  rec_.thread = !session ? "" : info.thread_id.empty() ? "main" : info.thread_id;
  if (session && counted_) {
    watch_prefix(info, body);
    if (facts_.thread.side) {
      rec_.thread.clear();  // belongs to no thread
    }
  }
}

void Placement::watch_prefix(const protocol::RequestInfo& info, std::string_view body) {
  const protocol::PromptStart start =
      protocol::prompt_start(body, info.layout, model_->config().normalize_prompt);
  const StartVerdict verdict = model_->prefix_watch().observe(
      {info.session_hash, info.thread_hash, start, info.offers_tools, info.prompt_tokens_estimate});
  facts_.thread.start = start.hash;
  facts_.thread.long_start = start.bytes >= protocol::kPromptStartBytes;
  facts_.thread.side = verdict == StartVerdict::side;
  if (verdict == StartVerdict::broke || verdict == StartVerdict::compacted) {
    spdlog::debug("prefix {}: model {} session {} thread {}",
                  verdict == StartVerdict::broke ? "break" : "compaction", model_->config().name,
                  info.session_key, info.thread_id.empty() ? "main" : info.thread_id);
  }
}

net::asio::awaitable<bool> Placement::place(int attempt, PlacementTry& at, bool defer_hold) {
  SharedHomes* shared = counted_ ? ctx_.shared : nullptr;
  at.held = false;
  // Held, its wait is kept alive (place_held()): the client's own timeout no longer bounds it.
  facts_.kept_alive = defer_hold;
  // With shared state: what the other wardens know of the conversation, before and after routing it.
  std::optional<PlacementTurnEnd> turn;  // ends after the claim (or on any way out before it)
  if (shared && attempt == 0 && shared->unknown_here(*model_, facts_)) {
    auto placing = co_await shared->turn(*model_);
    turn.emplace(std::move(placing));
    co_await shared->lookup(*model_, facts_, *turn->get());
  }
  if (!route(attempt, at)) {
    turn.reset();  // a held request does not keep the next placement waiting
    if (!at.decision.queued()) {
      co_return false;
    }
    if (defer_hold) {
      at.held = join_queue(at);  // the caller waits (place_held()); refused: at.failure
      co_return false;
    }
    if (!co_await hold(at)) {
      co_return false;
    }
  }
  // Named, not temporaries: GCC 12 destroys temporaries of a co_await expression twice.
  PlacementTurn* const placing = turn ? turn->get() : nullptr;
  const bool settled = co_await settle(attempt, at, placing);
  co_return settled;
}

net::asio::awaitable<bool> Placement::place_held(PlacementTry& at, std::chrono::steady_clock::duration every,
                                                 AdmissionQueue::KeepAlive keep_alive) {
  at.held = false;
  if (!co_await wait_in_queue(at, every, std::move(keep_alive))) {
    co_return false;
  }
  const bool settled = co_await settle(0, at, nullptr);
  co_return settled;
}

net::asio::awaitable<bool> Placement::settle(int attempt, PlacementTry& at, PlacementTurn* turn) {
  SharedHomes* shared = counted_ ? ctx_.shared : nullptr;
  if (shared && co_await shared->placement(*model_, facts_, attempt, at.decision, turn)) {
    if (follow_layout()) {
      model_->abandon(decision_);  // another warden placed it first: sent to its home instead
    }
    if (!route(attempt, at)) {
      co_return false;
    }
  }
  if (!follow_layout()) {
    // A reload removed its replica while it was being placed: routed again, as after a refused connect.
    at.retry = attempt == 0 && !facts_.pin;
    at.failure = {503, fmt::format("replica {} of '{}' was removed by a reload", rec_.replica, rec_.model),
                  "no_healthy_replica"};
    co_return false;
  }
  co_return true;
}

bool Placement::route(int attempt, PlacementTry& at) {
  // A retry must not go back to the replica that failed.
  std::optional<int> avoid;
  if (attempt > 0 && follow_layout() && rec_.replica >= 0) {
    avoid = rec_.replica;
  }
  // Admission holds only a request's first routing: one that generates nothing, or is retried after a
  // failure, goes as if it had waited its bound.
  core::RequestFacts facts = facts_;
  if (!counted_ || attempt > 0) {
    facts.queued_for = model_->routing().admission.max_wait;
  }
  at.decision = model_->route(facts, avoid, counted_, ctx_.rng);
  if (at.decision.queued()) {
    return false;  // the caller holds it (hold())
  }
  return take_decision(attempt, at);
}

bool Placement::take_decision(int attempt, PlacementTry& at) {
  drop_probe();  // routed again (another warden placed it first): the earlier pick probes nothing
  routed_ = counted_ && at.decision.ok();
  const core::Decision& d = at.decision;
  if (!d.ok()) {
    at.retry = false;
    // After a failure with nowhere else to go, the client hears what went wrong with the replica tried.
    if (attempt == 0 && d.reason == core::NoReplicaReason::pin_out_of_range) {
      at.failure = {400, "the replica pin is out of range", "invalid_pin"};
    } else if (attempt == 0) {
      at.failure = {503, fmt::format("no healthy replica of '{}' is available", rec_.model),
                    "no_healthy_replica"};
    }
    return false;
  }
  rec_.replica = static_cast<int>(*d.replica);
  layout_ = model_->layout();
  replica_removed_ = false;
  rec_.route = attempt > 0 ? "failover" : std::string(core::route_name(d.route));
  rec_.expected_cached = d.expected_cached_tokens;
  rec_.expected_exact = d.expected_exact;
  rec_.expected_block = d.expected_block;
  probe_ = model_->replica_set().outliers().take_probe(rec_.replica, steady_now());
  decision_ = d;
  awaiting_first_ = routed_;
  return true;
}

bool Placement::refuse_hold(PlacementTry& at, const char* reason, std::string message) {
  ctx_.metrics.queue_rejected(rec_.model, reason);
  // 503 with Retry-After: by then a request joining the queue would have gone at the latest.
  at.failure = {503, std::move(message), reason == std::string_view("full") ? "queue_full" : reason,
                std::max<std::int64_t>(
                    1, std::chrono::ceil<std::chrono::seconds>(model_->queue().max_wait(facts_)).count())};
  at.retry = false;
  return false;
}

bool Placement::join_queue(PlacementTry& at) {
  AdmissionQueue& queue = model_->queue();
  rec_.route = std::string(core::route_name(core::Route::queued));
  held_since_ = Clock::now();
  held_ = queue.join(facts_, held_since_);
  if (held_) {
    return true;
  }
  return queue.stopped()
             ? refuse_hold(at, "draining", kShuttingDown)
             : refuse_hold(
                   at, "full",
                   fmt::format("too many requests of '{}' are waiting for room on its replicas; retry later",
                               rec_.model));
}

net::asio::awaitable<bool> Placement::hold(PlacementTry& at) {
  if (!join_queue(at)) {
    co_return false;
  }
  const AdmissionQueue::KeepAlive none;  // named: see place()
  const bool went = co_await wait_in_queue(at, std::chrono::steady_clock::duration{}, none);
  co_return went;
}

net::asio::awaitable<bool> Placement::wait_in_queue(PlacementTry& at,
                                                    std::chrono::steady_clock::duration every,
                                                    AdmissionQueue::KeepAlive keep_alive) {
  AdmissionQueue& queue = model_->queue();
  const auto entry = std::exchange(held_, nullptr);
  try {
    if (keep_alive) {
      co_await queue.wait(entry, every, std::move(keep_alive));
    } else {
      co_await queue.wait(entry);
    }
  } catch (const boost::system::system_error&) {
    rec_.queued_s = std::chrono::duration<double>(Clock::now() - held_since_).count();
    rec_.status = 499;  // the client went away while it waited
    drop_held(entry);
    throw;
  }
  rec_.queued_s = std::chrono::duration<double>(Clock::now() - held_since_).count();
  if (entry->outcome == AdmissionQueue::Outcome::refused) {
    co_return refuse_hold(at, "draining", kShuttingDown);
  }
  ctx_.metrics.queue_admitted(rec_.model, *rec_.queued_s);
  at.decision = entry->decision;
  co_return take_decision(0, at);
}

void Placement::leave_queue() {
  if (const auto entry = std::exchange(held_, nullptr); entry && model_) {
    drop_held(entry);
  }
}

void Placement::drop_held(const std::shared_ptr<AdmissionQueue::Entry>& entry) {
  ctx_.metrics.queue_abandoned(rec_.model);
  if (entry->outcome == AdmissionQueue::Outcome::routed && entry->decision.ok()) {
    model_->abandon(entry->decision);  // routed as its client left: never sent
  } else {
    model_->queue().leave(entry);  // still in the queue (a wait that ended took it out already)
  }
}

bool Placement::follow_layout() {
  if (replica_removed_) {
    return false;
  }
  if (!model_ || rec_.replica < 0 || layout_ == model_->layout()) {
    return true;
  }
  const std::optional<int> now = model_->follow(rec_.replica, layout_);
  layout_ = model_->layout();
  if (!now) {
    replica_removed_ = true;
    routed_ = false;
    awaiting_first_ = false;
    probe_ = false;
    return false;
  }
  rec_.replica = *now;
  decision_.replica = static_cast<core::ReplicaIndex>(*now);
  return true;
}

void Placement::first_token() {
  follow_layout();
  if (awaiting_first_ && model_) {
    model_->first_token(decision_);
  }
  awaiting_first_ = false;
}

void Placement::release() {
  first_token();  // follows the layout
  if (routed_ && model_) {
    model_->finish(rec_.replica);  // room may free for a request admission holds
  }
  routed_ = false;
}

void Placement::failed(int attempt, PlacementTry& at, const UpstreamUrl& url, const AttemptFailure& failure) {
  at.retry = failure.may_retry && attempt == 0 && !facts_.pin;
  const bool still_there = follow_layout();
  if (at.retry && routed_) {
    // Routed again: count this request once, by its final route.
    model_->abandon(decision_);  // takes its prefill out of the backlog too (at its index now)
    routed_ = false;
    awaiting_first_ = false;
  } else {
    release();
  }
  if (failure.recalled) {
    drop_probe();  // sent elsewhere before the replica could answer: no verdict on it
  } else {
    judge(failure.reason);
  }
  if (still_there && failure.unreachable) {
    // In DP mode every rank sits behind this one server: it is the server that failed.
    const bool dp = model_->config().data_parallel;
    if (dp ? model_->replica_set().failed(replicas_of(model_->config(), url), failure.why)
           : model_->replica_set().replica_failed(rec_.replica, failure.why)) {
      ctx_.guard.replicas_down(
          *model_, dp ? replicas_of(model_->config(), url) : std::vector<int>{rec_.replica}, failure.why);
    }
  }
}

void Placement::judge(std::optional<core::OutlierReason> failure) {
  if (follow_layout() && model_ && rec_.replica >= 0) {
    ctx_.guard.outcome(*model_, rec_.replica, failure);
  }
  probe_ = false;
}

void Placement::drop_probe() {
  if (follow_layout() && probe_ && model_) {
    model_->replica_set().outliers().probe_dropped(rec_.replica);
  }
  probe_ = false;
}

void Placement::answered(bool final_text) {
  if (routed_ && model_) {
    model_->answered(facts_, final_text);
  }
}

void Placement::end() {
  leave_queue();  // held, and its wait never began (its client left first)
  drop_probe();
  if (routed_ && awaiting_first_ && rec_.status == 499 && model_ && follow_layout()) {
    model_->left_unanswered(facts_);
  }
  release();
}

}  // namespace warden::gateway
