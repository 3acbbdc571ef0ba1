// The proxy (proxy.hpp): admit → place → send → the whole response (the stream: proxy_stream.cpp).
#include "gateway/proxy/proxy.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/proxy/exchange.hpp"
#include "gateway/proxy/http_util.hpp"
#include "protocol/api.hpp"
#include "protocol/context_limit.hpp"
#include "protocol/error_body.hpp"
#include "protocol/kv_events.hpp"
#include "protocol/request.hpp"
#include "protocol/rewrite.hpp"
#include "protocol/usage.hpp"

namespace warden::gateway {

namespace asio = net::asio;
namespace http = net::http;

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

std::string upstream_code(unsigned status) {
  return status == 504 ? "upstream_timeout" : "upstream_error";
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

asio::awaitable<net::Reply> Proxy::handle(net::Request& req) {
  auto ex = std::make_shared<Exchange>(ctx_, shared_, *protocol::api_kind_from_path(req.target()));
  ex->record.endpoint = std::string(path_of(req.target()));
  Outgoing out;
  if (auto refused = admit(req, *ex, out)) {
    co_return std::move(*refused);
  }
  // A stream (that generates something) admission holds is answered at once and kept alive (held_reply()).
  const bool keep_held_alive = ex->record.stream && !out.counting_only;
  Attempt at;
  for (int attempt = 0;; ++attempt) {
    const bool answered = co_await forward(*ex, req, out, attempt, at, keep_held_alive && attempt == 0);
    if (answered) {
      break;
    }
    if (at.held) {
      co_return held_reply(ex, req, std::move(out));
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
  ex.placement.prepare(
      *ex.model, ex.api, *info, req.body(), out.counting_only,
      core::client_facts(ctx_.config.clients, protocol::HeaderLookup(lookup), req.body(), info->layout));
  out.layout = std::move(info->layout);
  out.rewritten = protocol::rewrite_request(ex.api, req.body(), out.layout, ro);
  const bool openai_stream = info->stream && (ex.api == protocol::ApiKind::openai_chat ||
                                              ex.api == protocol::ApiKind::openai_completions);
  out.drop_usage_chunk = openai_stream && !info->include_usage;
  return std::nullopt;
}

std::optional<Refusal> Proxy::fit_output(const Exchange& ex, const protocol::RequestInfo& info,
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

asio::awaitable<bool> Proxy::forward(Exchange& ex, const net::Request& req, const Outgoing& out, int attempt,
                                     Attempt& at, bool defer_hold) {
  // Named results, not `co_return co_await`: GCC 12 resumed this frame after its end with that form.
  const bool placed = co_await ex.placement.place(attempt, at, defer_hold);
  if (!placed) {
    co_return false;
  }
  const bool sent = co_await send(ex, req, out, attempt, at);
  co_return sent;
}

asio::awaitable<bool> Proxy::send(Exchange& ex, const net::Request& req, const Outgoing& out, int attempt,
                                  Attempt& at) {
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
    attempt_failed(ex, attempt, at, url, r.error(), false);
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
      attempt_failed(ex, attempt, at, url, r.error(), false);
      co_return false;
    }
    at.header_at = Clock::now();
  }
  if (!is_event_stream(r->header())) {
    at.upstream.emplace(std::move(*r));
    co_return true;
  }
  co_return co_await first_event(ex, req, attempt, at, url, *r, recall);
}

// An engine sends its header at once and its first event after the prefill. Waiting for that event (inside
// the attempt) sends the client header and event in one write, and a replica that breaks off before it has
// sent the client nothing: the request can still go elsewhere. The client's header is ready before the
// event arrives.
asio::awaitable<bool> Proxy::first_event(Exchange& ex, const net::Request& req, int attempt, Attempt& at,
                                         const UpstreamUrl& url, net::UpstreamResponse& r,
                                         net::Recall& recall) {
  at.reply.header = client_header(req, ex.record, r.header());
  if (!req.keep_alive()) {
    at.reply.header.set(http::field::connection, "close");
  }
  at.reply.header_with_first_chunk = true;
  net::prepare_header(at.reply, req.keep_alive());
  auto piece = co_await r.next(&recall);
  if (piece) {
    at.first.emplace(*piece);
    at.first_at = Clock::now();
    at.upstream.emplace(std::move(r));  // the piece points into the connection, which moves along
    co_return true;
  }
  throw_if_client_left(ex.record, piece.error());
  attempt_failed(ex, attempt, at, url, piece.error(), piece.error() != net::ClientErrc::recalled);
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
    attempt_failed(ex, attempt, at, url, body.error(), true);
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

void Proxy::attempt_failed(Exchange& ex, int attempt, Attempt& at, const UpstreamUrl& url,
                           const boost::system::error_code& failure, bool broke_off) {
  const RequestRecord& rec = ex.record;
  const bool recalled = failure == net::ClientErrc::recalled;
  AttemptFailure what;
  // broke_off: answered, then broke off before the first event; nothing reached the client.
  what.why =
      broke_off ? fmt::format("broke off before its first event: {}", failure.message()) : failure.message();
  what.may_retry = broke_off || retryable(failure);
  what.recalled = recalled;
  what.unreachable = !broke_off && retryable(failure) && !recalled;
  what.reason = failure == net::ClientErrc::first_byte_timeout ? core::OutlierReason::first_byte
                : failure == net::ClientErrc::idle_timeout     ? core::OutlierReason::stream_stall
                                                               : core::OutlierReason::gateway_error;
  ex.placement.failed(attempt, at, url, what);
  spdlog::warn("upstream {} (model {} replica {}) failed: {}{}", url.text, rec.model, rec.replica, what.why,
               at.retry ? "; retrying on another replica" : "");
  const unsigned status = broke_off ? 502 : status_for(failure);
  at.failure = {status, fmt::format("replica {} of '{}' failed: {}", rec.replica, rec.model, what.why),
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
    ex.placement.judge(core::OutlierReason::gateway_error);
    co_return ex.error_reply(req, {502,
                                   fmt::format("replica {} of '{}' broke off its response: {}", rec.replica,
                                               rec.model, body.error().message()),
                                   "upstream_error"});
  }
  // The engine answered: a 5xx counts against the replica, anything else for it.
  ex.placement.judge(rec.status >= 500 ? std::optional(core::OutlierReason::gateway_error) : std::nullopt);
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

}  // namespace warden::gateway
