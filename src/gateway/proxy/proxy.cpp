// The proxy (proxy.hpp): inspect → route → rewrite → relay, with usage accounting.
#include "gateway/proxy/proxy.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/this_coro.hpp>

#include "core/router.hpp"
#include "gateway/proxy/http_util.hpp"
#include "gateway/proxy/request_log.hpp"
#include "protocol/api.hpp"
#include "protocol/context_limit.hpp"
#include "protocol/error_body.hpp"
#include "protocol/kv_events.hpp"
#include "protocol/request.hpp"
#include "protocol/rewrite.hpp"
#include "protocol/stream_relay.hpp"
#include "protocol/task_start.hpp"
#include "protocol/usage.hpp"

namespace warden::gateway {

namespace asio = net::asio;
namespace http = net::http;

namespace {

// How long admission held the request, on every answer to one it held.
void set_queued_header(const RequestRecord& rec, http::response_header<>& head) {
  if (rec.queued_s) {
    head.set("x-warden-queued", fmt::format("{:.3f}", *rec.queued_s));
  }
}

// What the warden expected the replica to serve from cache: `x-warden-expected-cached: 12544; block=1568;
// exact` (exact: from the replica's KV cache events, else the estimate), for a load tool to compare with the
// usage the engine reports.
void set_expected_header(const RequestRecord& rec, http::response_header<>& head) {
  if (rec.expected_cached) {
    head.set("x-warden-expected-cached",
             fmt::format("{}; block={}{}", *rec.expected_cached, rec.expected_block,
                         rec.expected_exact ? "; exact" : ""));
  }
}

}  // namespace

// Why the client gets an error instead of the engine's answer.
struct Proxy::Refusal {
  unsigned status = 502;
  std::string message;
  std::string code;
  std::optional<std::int64_t> retry_after_s;  // a Retry-After header (a 503 the client may retry)
};

// One proxied request. Whoever holds the last reference (the handler frame, or the stream body once the
// handler returned) finishes it: the Router's in_flight is released and the record logged and counted,
// exactly once, however the request ends (success, upstream error, client disconnect, cancellation).
struct Proxy::Exchange {
  Proxy* proxy;
  protocol::ApiKind api;
  ModelRuntime* model = nullptr;
  RequestRecord record;
  Clock::time_point started = Clock::now();
  bool routed = false;           // holds a Router in_flight slot on record.replica
  bool complete = false;         // the response was fully relayed
  core::Decision decision;       // the routed attempt's decision, while routed
  bool awaiting_first = false;   // its prefill still counts in the replica's backlog (Router::first_token)
  bool probe = false;            // the one request an ejected replica gets after its backoff
  std::uint64_t layout = 0;      // the model's replica list record.replica indexes (ModelRuntime::layout())
  bool replica_removed = false;  // a reload removed record.replica (the old index, kept for the log)
  core::RequestFacts facts;      // what it was routed by, while routed (Router::answered at its end)

  Exchange(Proxy* p, protocol::ApiKind a) : proxy(p), api(a) {}
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // A reload relaid the model's replicas since this request was routed: record.replica (and the decision)
  // become its replica's index now. False if its replica was removed: the request finishes (or is routed
  // again) without touching the Router's state of another replica.
  bool follow_layout() {
    if (replica_removed) {
      return false;
    }
    if (!model || record.replica < 0 || layout == model->layout()) {
      return true;
    }
    const std::optional<int> now = model->follow(record.replica, layout);
    layout = model->layout();
    if (!now) {
      replica_removed = true;
      routed = false;
      awaiting_first = false;
      probe = false;
      return false;
    }
    record.replica = *now;
    decision.replica = static_cast<core::ReplicaIndex>(*now);
    return true;
  }

  // The first bytes of the answer arrived (or the request ends without them): its prefill is done.
  void note_first_token() {
    follow_layout();
    if (awaiting_first && model) {
      model->first_token(decision);
    }
    awaiting_first = false;
  }

  void release_replica() {
    note_first_token();  // follows the layout
    if (routed && model) {
      model->router().finish(static_cast<core::ReplicaIndex>(record.replica));
      model->retry_queued();  // room may have freed for a request admission holds
    }
    routed = false;
  }

  // The error answer in the API's own shape; the request ends with it.
  net::Response error_reply(const net::Request& req, const Refusal& why) {
    record.status = static_cast<int>(why.status);
    complete = true;
    net::Response r = net::make_response(
        req, why.status, protocol::format_error(api, static_cast<int>(why.status), why.message, why.code));
    if (record.replica >= 0) {
      r.set("x-warden-replica", std::to_string(record.replica));
      r.set("x-warden-route", record.route);
    }
    if (why.retry_after_s) {
      r.set(http::field::retry_after, std::to_string(*why.retry_after_s));
    }
    set_queued_header(record, r.base());
    return r;
  }

  // The outcome on its replica, for outlier ejection: a failure, or a success (nullopt).
  void judge(std::optional<core::OutlierReason> failure) {
    if (follow_layout() && model && record.replica >= 0) {
      proxy->ctx_.guard.outcome(*model, record.replica, failure);
    }
    probe = false;
  }

  // The request ends without a verdict on its replica (the client left, another replica was tried).
  void drop_probe() {
    if (follow_layout() && probe && model) {
      model->outliers().probe_dropped(record.replica);
    }
    probe = false;
  }

  void take_usage(const protocol::Usage& u) {
    record.prompt_tokens = u.prompt_tokens;
    record.cached_tokens = u.cached_tokens;
    record.completion_tokens = u.completion_tokens;
    if (u.end && routed && model) {
      model->router().answered(facts, *u.end == protocol::ReplyEnd::text);
    }
  }

  ~Exchange() {
    try {
      drop_probe();
      release_replica();
      if (!complete && record.status == 200) {
        record.status = 499;  // the client went away before the end of the response
      }
      record.duration_s = std::chrono::duration<double>(Clock::now() - started).count();
      proxy->finish(record);
    } catch (...) {
      // A destructor must not throw; logging failures are not worth a crash.
    }
  }
};

// What goes to the engine, prepared once for every attempt.
struct Proxy::Outgoing {
  core::RequestFacts facts;
  protocol::BodyLayout layout;  // for a second rewrite (an output cap from the engine's own figures)
  protocol::RewriteOptions options;
  protocol::RewriteResult rewritten;
  bool counting_only = false;     // count_tokens: generates nothing, routed without being counted
  bool drop_usage_chunk = false;  // the client did not ask for the usage chunk the rewrite asked for
};

// An attempt's outcome: the engine's answer (a stream's first piece read, the client's header prepared),
// or the refusal for the client and whether another replica may still be tried.
struct Proxy::Attempt {
  std::optional<net::UpstreamResponse> upstream;
  std::optional<net::BodyPiece> first;  // a stream's first piece, read before answering
  net::StreamReply reply;               // a stream's answer, prepared while the engine prefills
  Clock::time_point header_at;
  Clock::time_point first_at;
  core::Decision decision;  // where this attempt went
  Refusal failure;          // the last failure, for the client if no retry is possible
  bool retry = false;       // after a failure: another replica may be tried
  // An error answer already read (to see whether it was about the context): its header and body.
  std::optional<http::response_header<>> read_header;
  std::optional<std::string> read_body;
  protocol::RewriteResult refit;  // the body resent with the output cap the engine's error gave
  bool refitted = false;          // sent once more with that cap already
};

namespace {

bool retryable(const boost::system::error_code& ec) {
  return ec == net::ClientErrc::connect_failed || ec == net::ClientErrc::connect_timeout ||
         ec == net::ClientErrc::resolve_failed || ec == net::ClientErrc::closed_before_response ||
         ec == net::ClientErrc::write_timeout || ec == net::ClientErrc::recalled;
}

unsigned status_for(const boost::system::error_code& ec) {
  if (ec == net::ClientErrc::first_byte_timeout || ec == net::ClientErrc::connect_timeout ||
      ec == net::ClientErrc::idle_timeout) {
    return 504;
  }
  return 502;
}

bool is_event_stream(const http::response_header<>& h) {
  auto ct = h.find(http::field::content_type);
  return ct != h.end() && ct->value().find("text/event-stream") != std::string_view::npos;
}

// The routing facts of a request, in the core's terms.
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

// The request to the engine, serialized in one pass: the client's headers (minus hop-by-hop and the
// warden's own), the rank in DP mode, the thread's key as vLLM's session id (the engine names the thread
// in the KV cache events of the blocks it stores: core/kv_index.hpp), and the prompt borrowed, not copied
// (req and rewritten outlive the send).
net::RawRequest upstream_request(const net::Request& req, const protocol::RewriteResult& rewritten,
                                 const UpstreamUrl& url, const net::Endpoint& endpoint,
                                 std::optional<int> dp_rank, std::uint64_t thread_key) {
  net::RawRequest up;
  std::size_t body_size = req.body().size();
  if (rewritten.changed) {
    up.body.reserve(rewritten.pieces.size());
    for (const auto& piece : rewritten.pieces) {
      up.body.push_back(rewritten.bytes(piece, req.body()));
    }
    body_size = rewritten.size;
  } else {
    up.body.push_back(req.body());
  }
  up.head.reserve(256 + req.base().method_string().size() + req.target().size());
  up.head.append(req.method_string()).append(" ").append(url.base_path).append(req.target());
  up.head.append(" HTTP/1.1\r\nHost: ").append(endpoint.key()).append("\r\n");
  append_request_headers(req, up.head, thread_key != 0);
  if (thread_key != 0) {
    up.head.append("X-Session-ID: ").append(protocol::kv::session_id_of(thread_key)).append("\r\n");
  }
  if (dp_rank) {
    up.head.append("X-data-parallel-rank: ").append(std::to_string(*dp_rank)).append("\r\n");
  }
  up.head.append("Content-Length: ").append(std::to_string(body_size)).append("\r\n\r\n");
  return up;
}

// The client's header: the engine's, minus hop-by-hop fields, plus the warden's own.
http::response_header<> client_header(const net::Request& req, const RequestRecord& rec,
                                      const http::response_header<>& from) {
  http::response_header<> head;
  head.result(from.result());
  head.version(req.version());
  copy_response_headers(from, head);
  head.set("x-warden-replica", std::to_string(rec.replica));
  head.set("x-warden-route", rec.route);
  set_queued_header(rec, head);
  set_expected_header(rec, head);
  return head;
}

std::string upstream_code(unsigned status) {
  return status == 504 ? "upstream_timeout" : "upstream_error";
}

// An upstream operation ended because net::Server cancelled the handler: the client went away. The
// request ends here (logged and counted 499), not as a failure of the replica.
void throw_if_client_left(RequestRecord& rec, const boost::system::error_code& ec) {
  if (ec == asio::error::operation_aborted) {
    rec.status = 499;
    throw boost::system::system_error(ec);
  }
}

}  // namespace

Proxy::Proxy(asio::any_io_executor io, ProxyContext context) : ctx_(context), pool_(std::move(io)) {}

net::ClientTimeouts Proxy::client_timeouts() const {
  net::ClientTimeouts t;
  t.connect = ctx_.config.timeouts.connect;
  t.first_byte = ctx_.config.timeouts.first_byte;
  t.idle = ctx_.config.timeouts.idle;
  return t;
}

void Proxy::finish(RequestRecord& r) {
  ctx_.metrics.request_done(r);
  if (!r.model.empty()) {
    ctx_.stats.record(r.model, unix_seconds_now(), r);
  }
  if (spdlog::should_log(spdlog::level::info)) {  // the line is built only for a log that keeps it
    spdlog::info("{}", request_log_line(r));
  }
}

asio::awaitable<net::Reply> Proxy::handle(net::Request& req) {
  auto ex = std::make_shared<Exchange>(this, *protocol::api_kind_from_path(req.target()));
  ex->record.endpoint = std::string(path_of(req.target()));
  Outgoing out;
  if (auto refused = admit(req, *ex, out)) {
    co_return std::move(*refused);
  }
  Attempt at;
  for (int attempt = 0;; ++attempt) {
    const bool answered = co_await forward(*ex, req, out, attempt, at);
    if (answered) {
      break;
    }
    if (!at.retry) {
      co_return ex->error_reply(req, at.failure);
    }
  }
  ex->record.status = static_cast<int>(at.read_header ? at.read_header->result_int() : at.upstream->status());
  if (!at.first) {
    co_return co_await whole_response(*ex, req, out, at);
  }
  at.reply.body = relay_body(ex, std::move(*at.upstream), out.drop_usage_chunk, *at.first, at.first_at);
  co_return std::move(at.reply);
}

std::optional<net::Response> Proxy::admit(net::Request& req, Exchange& ex, Outgoing& out) {
  RequestRecord& rec = ex.record;
  if (req.method() != http::verb::post) {
    auto r = ex.error_reply(req, {405, fmt::format("{} takes POST", rec.endpoint), "method_not_allowed"});
    r.set(http::field::allow, "POST");
    return r;
  }
  if (!api_key_ok(req, ctx_.config.api_keys)) {
    return ex.error_reply(
        req,
        {401, "missing or invalid API key (Authorization: Bearer KEY or x-api-key: KEY)", "invalid_api_key"});
  }
  auto lookup = [&req](std::string_view name) -> std::optional<std::string_view> {
    auto it = req.find(name);
    if (it == req.end()) {
      return std::nullopt;
    }
    return it->value();
  };
  const auto info = protocol::inspect_request(ex.api, protocol::HeaderLookup(lookup), req.body());
  if (!info) {
    const auto errc = static_cast<protocol::Errc>(info.error().value());
    return ex.error_reply(
        req, {400, std::string(protocol::describe(errc)), std::string(protocol::to_string(errc))});
  }
  rec.stream = info->stream;
  ex.model = ctx_.models.find(info->model);
  if (!ex.model) {
    return ex.error_reply(
        req, {404, fmt::format("The model '{}' does not exist", info->model), "model_not_found"});
  }
  const ModelConfig& model = ex.model->config();
  rec.model = model.name;
  rec.session_source = std::string(protocol::to_string(info->session_source));
  const int replica_count = model.replica_count();
  if (info->pin.state != protocol::PinState::absent && !info->pin.in_range(replica_count)) {
    return ex.error_reply(req,
                          {400,
                           fmt::format("the replica pin must be an integer from 0 to {} (X-Warden-Replica "
                                       "or X-data-parallel-rank)",
                                       replica_count - 1),
                           "invalid_pin"});
  }
  out.counting_only = ex.api == protocol::ApiKind::anthropic_count_tokens;
  // Rewrite once: the model name the engine knows, usage in OpenAI streams (dropped again by the relay
  // if the client did not ask for it), the billing block dropped, the output cap that fits the context.
  protocol::RewriteOptions& ro = out.options;
  ro.model = model.served_model_name;
  ro.force_include_usage = true;
  ro.drop_billing = model.normalize_prompt;
  if (auto refused = fit_output(ex, *info, ro)) {
    return ex.error_reply(req, *refused);
  }
  out.facts = request_facts(*info);
  // Asked only where task admission may: a main thread's turn with tools (its last message parsed alone).
  out.facts.task_start = info->offers_tools && info->session_source != protocol::SessionSource::none &&
                         info->thread_id.empty() && protocol::starts_task(ex.api, req.body(), info->layout);
  rec.thread = info->session_source == protocol::SessionSource::none ? ""
               : info->thread_id.empty()                             ? "main"
                                                                     : info->thread_id;
  if (info->session_source != protocol::SessionSource::none && !out.counting_only) {
    watch_prefix(*ex.model, *info, req.body(), out.facts);
    if (out.facts.thread.side) {
      rec.thread.clear();  // belongs to no thread
    }
  }
  out.layout = std::move(info->layout);
  out.rewritten = protocol::rewrite_request(ex.api, req.body(), out.layout, ro);
  const bool openai_stream = info->stream && (ex.api == protocol::ApiKind::openai_chat ||
                                              ex.api == protocol::ApiKind::openai_completions);
  out.drop_usage_chunk = openai_stream && !info->include_usage;
  return std::nullopt;
}

std::optional<Proxy::Refusal> Proxy::fit_output(const Exchange& ex, const protocol::RequestInfo& info,
                                                protocol::RewriteOptions& ro) {
  const std::optional<std::int64_t> limit = ex.model->max_model_len();
  if (!ex.model->config().fit_max_tokens || !limit || ex.api == protocol::ApiKind::anthropic_count_tokens) {
    return std::nullopt;
  }
  // The estimate (~4 bytes a token) is rough either way: a prompt is refused here only when it is clearly
  // over; one near the limit goes as asked, and the engine's exact figures decide (forward()).
  const auto estimate = static_cast<std::int64_t>(info.prompt_tokens_estimate);
  if (estimate >= 2 * *limit) {
    return Refusal{400, protocol::prompt_too_long_message(ex.api, estimate, *limit),
                   std::string(protocol::kContextLengthExceeded)};
  }
  if (estimate < *limit) {
    ro.max_tokens_cap = protocol::fitting_max_tokens(*limit, estimate);
  }
  return std::nullopt;
}

void Proxy::watch_prefix(ModelRuntime& model, const protocol::RequestInfo& info, std::string_view body,
                         core::RequestFacts& facts) {
  const protocol::PromptStart start =
      protocol::prompt_start(body, info.layout, model.config().normalize_prompt);
  const StartVerdict verdict = model.prefix_watch().observe(
      {info.session_hash, info.thread_hash, start, info.offers_tools, info.prompt_tokens_estimate});
  facts.thread.start = start.hash;
  facts.thread.long_start = start.bytes >= protocol::kPromptStartBytes;
  facts.thread.side = verdict == StartVerdict::side;
  if (verdict == StartVerdict::broke || verdict == StartVerdict::compacted) {
    spdlog::debug("prefix {}: model {} session {} thread {}",
                  verdict == StartVerdict::broke ? "break" : "compaction", model.config().name,
                  info.session_key, info.thread_id.empty() ? "main" : info.thread_id);
  }
}

bool Proxy::route(Exchange& ex, const Outgoing& out, int attempt, Attempt& at) {
  RequestRecord& rec = ex.record;
  ModelRuntime& model = *ex.model;
  const auto now = Clock::now().time_since_epoch();
  // The live view as is; a copy only for a retry, which must not go back to the replica that failed.
  const std::vector<core::ReplicaMetrics>& live = model.metrics();
  std::vector<core::ReplicaMetrics> without_failed;
  if (attempt > 0 && ex.follow_layout() && rec.replica >= 0 &&
      static_cast<std::size_t>(rec.replica) < live.size()) {
    without_failed = live;
    without_failed[static_cast<std::size_t>(rec.replica)].healthy = false;
  }
  const std::vector<core::ReplicaMetrics>& metrics = without_failed.empty() ? live : without_failed;
  // Admission holds only a request's first routing: one that generates nothing, or is retried after a
  // failure, goes as if it had waited its bound.
  core::RequestFacts facts = out.facts;
  if (out.counting_only || attempt > 0) {
    facts.queued_for = model.router().routing_config().admission.max_wait;
  }
  if (out.counting_only) {
    at.decision = model.router().route_uncounted(facts, metrics, now, ctx_.rng);
  } else {
    at.decision = model.router().route(facts, metrics, now, ctx_.rng);
  }
  if (at.decision.queued()) {
    return false;  // the caller holds it (hold())
  }
  return take_decision(ex, out, attempt, at);
}

bool Proxy::take_decision(Exchange& ex, const Outgoing& out, int attempt, Attempt& at) {
  RequestRecord& rec = ex.record;
  ex.drop_probe();  // routed again (another warden placed it first): the earlier pick probes nothing
  ex.routed = !out.counting_only && at.decision.ok();
  ex.facts = out.facts;
  const core::Decision& d = at.decision;
  if (!d.ok()) {
    at.retry = false;
    // After a failure with nowhere else to go, the client hears what went wrong with the replica tried.
    if (attempt == 0 && d.reason == core::NoReplicaReason::pin_out_of_range) {
      at.failure = {400, "the replica pin is out of range", "invalid_pin"};
    } else if (attempt == 0) {
      at.failure = {503, fmt::format("no healthy replica of '{}' is available", rec.model),
                    "no_healthy_replica"};
    }
    return false;
  }
  rec.replica = static_cast<int>(*d.replica);
  ex.layout = ex.model->layout();
  ex.replica_removed = false;
  rec.route = attempt > 0 ? "failover" : std::string(core::route_name(d.route));
  rec.expected_cached = d.expected_cached_tokens;
  rec.expected_exact = d.expected_exact;
  rec.expected_block = d.expected_block;
  ex.probe = ex.model->outliers().take_probe(rec.replica, Clock::now().time_since_epoch());
  ex.decision = d;
  ex.awaiting_first = ex.routed;
  return true;
}

// A first routing admission held: the request waits in the model's queue until it is routed again with
// room (or at its bound). False: refused (the queue is full, or the warden shuts down). A client that
// leaves meanwhile is taken out of the queue and never sent (the wait throws operation_aborted).
asio::awaitable<bool> Proxy::hold(Exchange& ex, const Outgoing& out, Attempt& at) {
  RequestRecord& rec = ex.record;
  AdmissionQueue& queue = ex.model->queue();
  rec.route = std::string(core::route_name(core::Route::queued));
  // 503 with Retry-After: by then a request joining the queue would have gone at the latest.
  auto refuse = [&](const char* reason, std::string message) {
    ctx_.metrics.queue_rejected(rec.model, reason);
    at.failure = {503, std::move(message), reason == std::string_view("full") ? "queue_full" : reason,
                  std::max<std::int64_t>(
                      1, std::chrono::ceil<std::chrono::seconds>(queue.max_wait(out.facts)).count())};
    at.retry = false;
    return false;
  };
  const char* shutting_down = "The server is shutting down; retry on another instance";
  const auto since = Clock::now();
  const auto entry = queue.join(out.facts, since);
  if (!entry) {
    co_return queue.stopped()
        ? refuse("draining", shutting_down)
        : refuse("full",
                 fmt::format("too many requests of '{}' are waiting for room on its replicas; retry later",
                             rec.model));
  }
  try {
    co_await queue.wait(entry);
  } catch (const boost::system::system_error&) {
    rec.queued_s = std::chrono::duration<double>(Clock::now() - since).count();
    rec.status = 499;  // the client went away while it waited
    ctx_.metrics.queue_abandoned(rec.model);
    if (entry->outcome == AdmissionQueue::Outcome::routed && entry->decision.ok()) {
      ex.model->router().abandon(entry->decision);  // routed the moment the client left: never sent
    }
    throw;
  }
  rec.queued_s = std::chrono::duration<double>(Clock::now() - since).count();
  if (entry->outcome == AdmissionQueue::Outcome::refused) {
    co_return refuse("draining", shutting_down);
  }
  ctx_.metrics.queue_admitted(rec.model, *rec.queued_s);
  at.decision = entry->decision;
  co_return take_decision(ex, out, 0, at);
}

asio::awaitable<bool> Proxy::forward(Exchange& ex, const net::Request& req, const Outgoing& out, int attempt,
                                     Attempt& at) {
  // With shared state: what the other wardens know of the conversation, before and after routing it.
  std::optional<PlacementTurnEnd> turn;  // ends after the claim (or on any way out before it)
  if (shared_ && !out.counting_only && attempt == 0 && shared_->unknown_here(*ex.model, out.facts)) {
    auto placing = co_await shared_->turn(*ex.model);
    turn.emplace(std::move(placing));
    co_await shared_->lookup(*ex.model, out.facts, *turn->get());
  }
  if (!route(ex, out, attempt, at)) {
    turn.reset();  // a held request does not keep the next placement waiting
    if (!at.decision.queued() || !co_await hold(ex, out, at)) {
      co_return false;
    }
  }
  if (shared_ && !out.counting_only &&
      co_await shared_->placement(*ex.model, out.facts, attempt, at.decision, turn ? turn->get() : nullptr)) {
    if (ex.follow_layout()) {
      ex.model->router().abandon(ex.decision);  // another warden placed it first: sent to its home instead
    }
    if (!route(ex, out, attempt, at)) {
      co_return false;
    }
  }
  turn.reset();
  if (!ex.follow_layout()) {
    // A reload removed its replica while it was being placed: routed again, as after a refused connect.
    at.retry = attempt == 0 && !out.facts.pin;
    at.failure = {
        503, fmt::format("replica {} of '{}' was removed by a reload", ex.record.replica, ex.record.model),
        "no_healthy_replica"};
    co_return false;
  }
  const ModelConfig& model = ex.model->config();
  // A copy: a reload may change the model's replica list while the request is out.
  const UpstreamUrl url = model.replica_url(ex.record.replica);
  // Named, not temporaries: GCC 12 destroys temporaries of a co_await expression twice.
  const net::Endpoint endpoint{url.host, url.port, url.tls};
  const std::optional<int> dp_rank =
      model.data_parallel ? std::optional<int>(ex.record.replica) : std::nullopt;
  const net::RawRequest up =
      upstream_request(req, out.rewritten, url, endpoint, dp_rank, at.decision.thread_key);
  ex.model->sent(ex.record.replica, at.decision);
  const net::ClientTimeouts timeouts = client_timeouts();
  // Until its first event the request can go elsewhere: recalled if the replica is marked unhealthy.
  net::Recall recall;
  const WaitingRequests::Entry waiting = ctx_.guard.await_first_byte(*ex.model, ex.record.replica, recall);
  auto r = co_await pool_.send(endpoint, up, timeouts, &recall);
  if (!r) {
    throw_if_client_left(ex.record, r.error());
    attempt_failed(ex, out, attempt, at, url, r.error(), false);
    co_return false;
  }
  at.header_at = Clock::now();
  if (r->status() == 400 && model.fit_max_tokens && !out.counting_only && !at.refitted) {
    const Refit step = co_await refit(ex, req, out, attempt, at, url, *r);
    if (step == Refit::relay) {
      at.upstream.emplace(std::move(*r));
      co_return true;
    }
    if (step != Refit::resend) {
      co_return false;
    }
    const net::RawRequest again =
        upstream_request(req, at.refit, url, endpoint, dp_rank, at.decision.thread_key);
    r = co_await pool_.send(endpoint, again, timeouts, &recall);
    if (!r) {
      throw_if_client_left(ex.record, r.error());
      attempt_failed(ex, out, attempt, at, url, r.error(), false);
      co_return false;
    }
    at.header_at = Clock::now();
  }
  if (!is_event_stream(r->header())) {
    at.upstream.emplace(std::move(*r));
    co_return true;
  }
  // An engine sends its header at once and its first event after the prefill. Waiting for that event
  // (inside the attempt) sends the client header and event in one write, and a replica that breaks off
  // before it has sent the client nothing: the request can still go elsewhere. The client's header is
  // ready before the event arrives.
  at.reply.header = client_header(req, ex.record, r->header());
  if (!req.keep_alive()) {
    at.reply.header.set(http::field::connection, "close");
  }
  at.reply.header_with_first_chunk = true;
  net::prepare_header(at.reply, req.keep_alive());
  auto piece = co_await r->next(&recall);
  if (piece) {
    at.first.emplace(*piece);
    at.first_at = Clock::now();
    at.upstream.emplace(std::move(*r));  // the piece points into the connection, which moves along
    co_return true;
  }
  throw_if_client_left(ex.record, piece.error());
  attempt_failed(ex, out, attempt, at, url, piece.error(), piece.error() != net::ClientErrc::recalled);
  co_return false;
}

asio::awaitable<Proxy::Refit> Proxy::refit(Exchange& ex, const net::Request& req, const Outgoing& out,
                                           int attempt, Attempt& at, const UpstreamUrl& url,
                                           net::UpstreamResponse& r) {
  // Copied now: the header lives in the pooled connection, which read_all() may hand back.
  http::response_header<> head = client_header(req, ex.record, r.header());
  auto body = co_await r.read_all(1u << 20);
  if (!body) {
    throw_if_client_left(ex.record, body.error());
    attempt_failed(ex, out, attempt, at, url, body.error(), true);
    co_return Refit::failed;
  }
  const auto overflow = protocol::parse_context_overflow(*body);
  if (overflow && overflow->prompt_too_long()) {
    at.retry = false;
    at.failure = {400,
                  protocol::prompt_too_long_message(ex.api, overflow->input_tokens, overflow->max_model_len),
                  std::string(protocol::kContextLengthExceeded)};
    co_return Refit::refuse;
  }
  protocol::RewriteOptions ro = out.options;
  if (overflow) {
    ro.max_tokens_cap = protocol::fitting_max_tokens(overflow->max_model_len, overflow->input_tokens);
    at.refit = protocol::rewrite_request(ex.api, req.body(), out.layout, ro);
  }
  if (!overflow || !at.refit.capped) {
    // Not about the context, or nothing to lower: the engine's answer is the client's.
    at.read_header = std::move(head);
    at.read_body = std::move(*body);
    co_return Refit::relay;
  }
  at.refitted = true;
  spdlog::info("model {} replica {}: output cap {} from the engine's context error; sending again",
               ex.record.model, ex.record.replica, *ro.max_tokens_cap);
  co_return Refit::resend;
}

void Proxy::attempt_failed(Exchange& ex, const Outgoing& out, int attempt, Attempt& at,
                           const UpstreamUrl& url, const boost::system::error_code& failure, bool broke_off) {
  RequestRecord& rec = ex.record;
  // broke_off: answered, then broke off before the first event; nothing reached the client.
  const std::string why =
      broke_off ? fmt::format("broke off before its first event: {}", failure.message()) : failure.message();
  at.retry = (broke_off || retryable(failure)) && attempt == 0 && !out.facts.pin;
  const bool still_there = ex.follow_layout();
  if (at.retry && ex.routed) {
    // Routed again: count this request once, by its final route.
    ex.model->router().abandon(ex.decision);  // takes its prefill out of the backlog too (at its index now)
    ex.routed = false;
    ex.awaiting_first = false;
  } else {
    ex.release_replica();
  }
  if (failure == net::ClientErrc::recalled) {
    ex.drop_probe();  // sent elsewhere before the replica could answer: no verdict on it
  } else {
    ex.judge(failure == net::ClientErrc::first_byte_timeout ? core::OutlierReason::first_byte
             : failure == net::ClientErrc::idle_timeout     ? core::OutlierReason::stream_stall
                                                            : core::OutlierReason::gateway_error);
  }
  if (still_there && !broke_off && retryable(failure) && failure != net::ClientErrc::recalled) {
    // In DP mode every rank sits behind this one server: it is the server that failed.
    const bool dp = ex.model->config().data_parallel;
    if (dp ? ex.model->url_failed(url, why) : ex.model->replica_failed(rec.replica, why)) {
      ctx_.guard.replicas_down(*ex.model, dp ? ex.model->replicas_of(url) : std::vector<int>{rec.replica},
                               why);
    }
  }
  spdlog::warn("upstream {} (model {} replica {}) failed: {}{}", url.text, rec.model, rec.replica, why,
               at.retry ? "; retrying on another replica" : "");
  const unsigned status = broke_off ? 502 : status_for(failure);
  at.failure = {status, fmt::format("replica {} of '{}' failed: {}", rec.replica, rec.model, why),
                upstream_code(status)};
}

asio::awaitable<net::Response> Proxy::whole_response(Exchange& ex, const net::Request& req,
                                                     const Outgoing& out, Attempt& at) {
  RequestRecord& rec = ex.record;
  // Copied now: the upstream header lives in the pooled connection, which read_all() may hand back.
  http::response_header<> head =
      at.read_header ? *at.read_header : client_header(req, rec, at.upstream->header());
  // Two statements, not a conditional: GCC 12 destroys a temporary awaitable in `c ? a : b` twice.
  net::Result<std::string> body = std::string();
  if (at.read_body) {
    body = std::move(*at.read_body);
  } else {
    body = co_await at.upstream->read_all(256u << 20);
  }
  if (!body) {
    throw_if_client_left(rec, body.error());
    ex.judge(core::OutlierReason::gateway_error);
    co_return ex.error_reply(req, {502,
                                   fmt::format("replica {} of '{}' broke off its response: {}", rec.replica,
                                               rec.model, body.error().message()),
                                   "upstream_error"});
  }
  // The engine answered: a 5xx counts against the replica, anything else for it.
  ex.judge(rec.status >= 500 ? std::optional(core::OutlierReason::gateway_error) : std::nullopt);
  rec.ttfb_s = std::chrono::duration<double>(at.header_at - ex.started).count();
  if (rec.status == 200 && !out.counting_only) {
    if (auto u = protocol::parse_usage_body(ex.api, *body)) {
      ex.take_usage(*u);
    }
  }
  net::Response res{std::move(head)};
  res.body() = std::move(*body);
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  ex.complete = true;
  co_return res;
}

Proxy::StreamBody Proxy::relay_body(std::shared_ptr<Exchange> ex, net::UpstreamResponse upstream,
                                    bool drop_usage_chunk, net::BodyPiece first, Clock::time_point first_at) {
  auto shared_up = std::make_shared<net::UpstreamResponse>(std::move(upstream));
  return [ex = std::move(ex), shared_up = std::move(shared_up), drop_usage_chunk, first,
          first_at](net::StreamWriter& w) {
    return relay_stream(ex, shared_up, drop_usage_chunk, first, first_at, w);
  };
}

asio::awaitable<void> Proxy::relay_stream(std::shared_ptr<Exchange> ex,
                                          std::shared_ptr<net::UpstreamResponse> up, bool drop_usage_chunk,
                                          net::BodyPiece first, Clock::time_point first_at,
                                          net::StreamWriter& w) {
  RequestRecord& rec = ex->record;
  std::optional<net::BodyPiece> pending = first;  // valid until the next call on up
  protocol::StreamRelay relay(ex->api, drop_usage_chunk);
  std::optional<Clock::time_point> first_byte;
  std::optional<Clock::time_point> first_content;
  auto note_content = [&](Clock::time_point arrived) {
    if (!first_content && relay.saw_content()) {
      first_content = arrived;
    }
  };
  bool ok = true;
  // A replica ejected as stalled makes no token for any stream: they end with an error the agent retries
  // on, not silence until timeouts.idle (ReplicaGuard).
  net::Recall stalled;
  const WaitingRequests::Entry relaying = ex->proxy->ctx_.guard.relay(*ex->model, rec.replica, stalled);
  while (true) {
    net::Result<net::BodyPiece> piece = net::BodyPiece{};
    Clock::time_point arrived = first_at;
    if (pending) {
      piece = *pending;
      pending.reset();
    } else {
      piece = co_await up->next(&stalled);
      arrived = Clock::now();
    }
    if (!piece) {
      if (piece.error() == net::ClientErrc::recalled) {
        spdlog::warn("stream from replica {} of '{}' cut: the replica was ejected as stalled", rec.replica,
                     rec.model);
        rec.stream_break = "stalled";
      } else if (w.cut()) {
        // The warden stopped before the engine's end (the drain ran out): the server cancelled this body
        // and lets it write one last event.
        rec.stream_break = "shutdown";
        co_await asio::this_coro::reset_cancellation_state();
      } else if (w.failed() || piece.error() == asio::error::operation_aborted) {
        rec.status = 499;
      } else {
        spdlog::warn("stream from replica {} of '{}' broke off: {}", rec.replica, rec.model,
                     piece.error().message());
        rec.stream_break = piece.error() == net::ClientErrc::idle_timeout ? "timeout" : "engine";
      }
      ok = false;
      break;
    }
    if (piece->done) {
      break;
    }
    if (piece->data.empty() && !piece->last) {
      continue;  // an empty write would read as the end of the chunked body
    }
    if (!first_byte) {
      first_byte = arrived;
      ex->note_first_token();
    }
    const protocol::StreamRelay::Step step = relay.feed(piece->data);
    note_content(arrived);
    if (step.stop) {
      ok = false;  // an event too large to inspect: the stream cannot be filtered safely
      rec.stream_break = "filter";
      break;
    }
    // The end of the upstream body came with these bytes: end the client's body in the same write.
    // Two statements, not a conditional: GCC 12 destroys a temporary awaitable in `c ? a : b` twice.
    boost::system::error_code ec;
    if (piece->last) {
      ec = co_await w.write_last(step.send);
    } else if (!step.send.empty()) {
      ec = co_await w.write(step.send);
    }
    const bool filtered = relay.after_write();
    note_content(arrived);
    if (ec) {
      up->abort();  // the client is gone: the engine must learn it now
      ok = false;
      rec.status = 499;
      break;
    }
    if (!filtered) {
      ok = false;  // an event too large to inspect: the stream cannot be filtered safely
      rec.stream_break = "filter";
      break;
    }
  }
  if (!rec.stream_break.empty()) {
    co_await break_stream(*ex, relay, w);
  }
  end_stream(*ex, *up, relay, ok, w.failed(), first_content ? first_content : first_byte);
}

// The client's stream ends visibly broken: an error event in its API's format, then the connection is
// closed without the end of the chunked body (a truncated answer must never look complete).
asio::awaitable<void> Proxy::break_stream(Exchange& ex, const protocol::StreamRelay& relay,
                                          net::StreamWriter& w) {
  const RequestRecord& rec = ex.record;
  const std::string message =
      rec.stream_break == "timeout"
          ? fmt::format("replica {} of '{}' stopped sending its stream", rec.replica, rec.model)
      : rec.stream_break == "filter"
          ? fmt::format("an event of replica {} of '{}' was too large to relay", rec.replica, rec.model)
      : rec.stream_break == "shutdown"
          ? std::string("the warden is shutting down: the stream was cut before its end; retry the request")
      : rec.stream_break == "stalled"
          ? fmt::format(
                "replica {} of '{}' stopped making progress and was taken out of routing; retry the "
                "request",
                rec.replica, rec.model)
          : fmt::format("replica {} of '{}' broke off its stream", rec.replica, rec.model);
  const std::string event = protocol::stream_error_event(ex.api, message, !relay.between_events());
  co_await w.write(event);
  w.abort();
}

void Proxy::end_stream(Exchange& ex, net::UpstreamResponse& up, const protocol::StreamRelay& relay, bool ok,
                       bool client_failed, std::optional<Clock::time_point> first_token) {
  RequestRecord& rec = ex.record;
  if (!ok) {
    up.abort();
  }
  if (first_token) {
    rec.ttfb_s = std::chrono::duration<double>(*first_token - ex.started).count();
  }
  if (auto u = relay.usage()) {
    ex.take_usage(*u);
  }
  if (ok) {
    ex.judge(std::nullopt);
  } else if (rec.stream_break == "timeout" || rec.stream_break == "engine") {
    ex.judge(rec.stream_break == "timeout" ? core::OutlierReason::stream_stall
                                           : core::OutlierReason::gateway_error);
  }
  if (!ok && rec.status == 200) {
    // The client went away (499), or the engine broke off the stream (502: the client saw it truncated).
    rec.status = client_failed ? 499 : 502;
  }
  ex.complete = ok || rec.status == 502;
}

}  // namespace warden::gateway
