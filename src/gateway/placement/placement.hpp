// One request's place among its model's replicas: facts in (the inspected request), a decision out (a
// replica, or why none). Admission may hold the request in the model's queue first (hold()); with state
// shared through Redis the other wardens are asked before and after routing it (place()). Every outcome
// goes back to the model's runtime through its narrow door: the first token, the end, a failure, a retry
// elsewhere, the engine's verdict on the conversation. No transport: the proxy sends the bytes where the
// placement says and tells it how that went. Runs on the gateway's I/O thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/outlier.hpp"
#include "core/rng.hpp"
#include "core/types.hpp"
#include "core/work_class.hpp"
#include "gateway/config/config.hpp"
#include "gateway/runtime/model_runtime.hpp"
#include "gateway/runtime/replica_guard.hpp"
#include "gateway/runtime/request_record.hpp"
#include "gateway/runtime/warden_metrics.hpp"
#include "gateway/shared/shared_homes.hpp"
#include "protocol/api.hpp"
#include "protocol/request.hpp"

namespace warden::gateway {

// Why the client gets an error instead of the engine's answer.
struct Refusal {
  unsigned status = 502;
  std::string message;
  std::string code;
  std::optional<std::int64_t> retry_after_s;  // a Retry-After header (a 503 the client may retry)
};

// One attempt's placement: where it went, or the refusal for the client and whether another replica may
// still be tried.
struct PlacementTry {
  core::Decision decision;  // where this attempt went
  Refusal failure;          // the last failure, for the client if no retry is possible
  bool retry = false;       // after a failure: another replica may be tried
  bool held = false;        // place(..., defer_hold): admission holds it, and the caller waits (place_held())
};

// What became of an attempt the proxy sent, as the placement needs it (the proxy reads it from the
// transport's error).
struct AttemptFailure {
  std::string why;             // for the log and the replica's last error
  bool may_retry = false;      // nothing reached the client: another replica may take the request
  bool recalled = false;       // sent elsewhere before the replica answered: no verdict on it
  bool unreachable = false;    // the replica (its server, in DP mode) could not be reached
  core::OutlierReason reason;  // the verdict on the replica, unless recalled
};

// What the placement reads and changes of the rest of the warden.
struct PlacementContext {
  core::SplitMixRng& rng;         // the gateway's one generator
  ReplicaGuard& guard;            // requests waiting on a replica, and each request's outcome on it
  WardenMetrics& metrics;         // admission's verdicts counted
  SharedHomes* shared = nullptr;  // with `state: { redis: ... }` only
};

// The routing facts of a request, in the core's terms.
core::RequestFacts request_facts(const protocol::RequestInfo& info);

class Placement {
 public:
  // Writes where the request went (replica, route, expected cache, time held) into `record`.
  Placement(PlacementContext ctx, RequestRecord& record) : ctx_(ctx), rec_(record) {}
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  // The request, inspected once: its model, the facts it is routed by (its prompt start judged per thread
  // when it has a session and generates something) and its thread named in the record. `counting_only`:
  // it generates nothing (count_tokens), routed without being counted.
  // `client`: its class of work and tenant (core::client_facts), in its facts and the record.
  void prepare(ModelRuntime& model, protocol::ApiKind api, const protocol::RequestInfo& info,
               std::string_view body, bool counting_only, const core::ClientFacts& client = {});
  const core::RequestFacts& facts() const { return facts_; }

  // Where attempt `attempt` goes: true with at.decision (and the record's replica and route), false with
  // at.failure and at.retry. A first routing that admission holds waits in the model's queue (hold());
  // with shared state the other wardens' home for the conversation may win.
  // `defer_hold`: a first routing admission holds returns false with at.held, and the caller keeps the
  // client's wait alive while place_held() waits (a stream whose response it starts meanwhile).
  net::asio::awaitable<bool> place(int attempt, PlacementTry& at, bool defer_hold = false);
  // The wait place() left to the caller: held in the model's queue with `keep_alive` called each
  // `every` (false: the client is gone, which ends the wait as a client that left), then placed as by
  // place() (false: refused, at.failure says why).
  net::asio::awaitable<bool> place_held(PlacementTry& at, std::chrono::steady_clock::duration every,
                                        AdmissionQueue::KeepAlive keep_alive);
  // One routing over the model's replicas as they are (for a retry, without the replica that failed).
  // False with at.decision.queued(): admission holds the request (hold() waits for its turn).
  bool route(int attempt, PlacementTry& at);
  // A first routing admission held: waits in the model's queue until it is routed again with room (or at
  // its bound). False: refused (the queue is full, or the warden shuts down). A client that leaves
  // meanwhile is taken out of the queue and never sent (the wait throws operation_aborted).
  net::asio::awaitable<bool> hold(PlacementTry& at);

  // A reload relaid the model's replicas since this request was routed: the record's replica (and the
  // decision) become its replica's index now. False if its replica was removed: the request finishes (or
  // is routed again) without touching the runtime's state of another replica.
  bool follow_layout();
  // The first bytes of the answer arrived (or the request ends without them): its prefill is done.
  void first_token();
  // The attempt failed before the client got anything: at.retry says whether another replica may be tried.
  void failed(int attempt, PlacementTry& at, const UpstreamUrl& url, const AttemptFailure& failure);
  // The outcome on its replica, for outlier ejection: a failure, or a success (nullopt).
  void judge(std::optional<core::OutlierReason> failure);
  // The request ends without a verdict on its replica (the client left, another replica was tried).
  void drop_probe();
  // The engine's reply ended, with its final text or not (core::Router::answered).
  void answered(bool final_text);
  // The request ends, however it ends: its replica released, exactly once. A task start its client left
  // before any answer is no task under way (core::Router::left_unanswered).
  void end();

 private:
  bool take_decision(int attempt, PlacementTry& at);
  // After routing (and any hold): the other wardens' placement with shared state, the replica layout.
  net::asio::awaitable<bool> settle(int attempt, PlacementTry& at, PlacementTurn* turn);
  // Its prompt start, judged per thread (PrefixWatch): sets facts_.thread's start and side.
  void watch_prefix(const protocol::RequestInfo& info, std::string_view body);
  void release();
  // hold() in two steps: joined the model's queue (false: refused, at.failure), then the wait (with
  // `keep_alive` each `every` when it is set).
  bool join_queue(PlacementTry& at);
  net::asio::awaitable<bool> wait_in_queue(PlacementTry& at, std::chrono::steady_clock::duration every,
                                           AdmissionQueue::KeepAlive keep_alive);
  bool refuse_hold(PlacementTry& at, const char* reason, std::string message);
  // A request that joined the queue and never waited leaves it (routed meanwhile: the decision abandoned).
  void leave_queue();
  // A held request its client left: counted abandoned, out of the queue, its decision (if it was routed
  // meanwhile) abandoned.
  void drop_held(const std::shared_ptr<AdmissionQueue::Entry>& entry);

  PlacementContext ctx_;
  RequestRecord& rec_;
  ModelRuntime* model_ = nullptr;
  core::RequestFacts facts_;
  bool counted_ = true;           // generates something: routed and counted on its replica
  bool routed_ = false;           // holds a Router in_flight slot on rec_.replica
  core::Decision decision_;       // the routed attempt's decision, while routed
  bool awaiting_first_ = false;   // its prefill still counts in the replica's backlog (Router::first_token)
  bool probe_ = false;            // the one request an ejected replica gets after its backoff
  std::uint64_t layout_ = 0;      // the model's replica list rec_.replica indexes (ModelRuntime::layout())
  bool replica_removed_ = false;  // a reload removed rec_.replica (the old index, kept for the log)
  std::shared_ptr<AdmissionQueue::Entry> held_;  // joined the queue, its wait not begun (join_queue())
  std::chrono::steady_clock::time_point held_since_;
};

}  // namespace warden::gateway
