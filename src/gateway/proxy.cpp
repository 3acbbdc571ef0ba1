// The proxy half of the gateway: inspect → route → rewrite → relay, with usage accounting.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/this_coro.hpp>

#include "core/decide.hpp"
#include "gateway/gateway.hpp"
#include "gateway/http_util.hpp"
#include "protocol/api.hpp"
#include "protocol/errors.hpp"
#include "protocol/request.hpp"
#include "protocol/rewrite.hpp"
#include "protocol/sse.hpp"
#include "protocol/usage.hpp"

namespace warden::gateway {

namespace asio = net::asio;
namespace http = net::http;
using Clock = std::chrono::steady_clock;

// One proxied request. Whoever holds the last reference (the handler frame, or the stream body once the
// handler returned) finishes it: the Router's in_flight is released and the record logged and counted,
// exactly once, however the request ends (success, upstream error, client disconnect, cancellation).
struct Gateway::Exchange {
  Gateway* gateway;
  ModelRuntime* model = nullptr;
  RequestRecord record;
  Clock::time_point started = Clock::now();
  bool routed = false;    // holds a Router in_flight slot on record.replica
  bool complete = false;  // the response was fully relayed

  Exchange(Gateway* g) : gateway(g) {}
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  void release_replica() {
    if (routed && model) {
      model->router().finish(static_cast<core::ReplicaIndex>(record.replica));
    }
    routed = false;
  }
  ~Exchange() {
    try {
      release_replica();
      if (!complete && record.status == 200) {
        record.status = 499;  // the client went away before the end of the response
      }
      record.duration_s = std::chrono::duration<double>(Clock::now() - started).count();
      gateway->finish_request(record);
    } catch (...) {
      // A destructor must not throw; logging failures are not worth a crash.
    }
  }
};

namespace {

bool retryable(const boost::system::error_code& ec) {
  return ec == net::ClientErrc::connect_failed || ec == net::ClientErrc::connect_timeout ||
         ec == net::ClientErrc::resolve_failed || ec == net::ClientErrc::closed_before_response ||
         ec == net::ClientErrc::write_timeout;
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

std::string_view session_source_name(protocol::SessionSource s) {
  return protocol::to_string(s);
}

}  // namespace

asio::awaitable<net::Reply> Gateway::proxy(net::Request& req) {
  const protocol::ApiKind api = *protocol::api_kind_from_path(req.target());
  auto ex = std::make_shared<Exchange>(this);
  RequestRecord& rec = ex->record;
  rec.endpoint = std::string(path_of(req.target()));

  auto error_reply = [&](unsigned status, std::string_view message, std::string_view code = {}) {
    rec.status = static_cast<int>(status);
    ex->complete = true;
    net::Response r =
        net::make_response(req, status, protocol::format_error(api, static_cast<int>(status), message, code));
    if (rec.replica >= 0) {
      r.set("x-warden-replica", std::to_string(rec.replica));
      r.set("x-warden-route", rec.route);
    }
    return r;
  };

  if (req.method() != http::verb::post) {
    auto r = error_reply(405, fmt::format("{} takes POST", rec.endpoint), "method_not_allowed");
    r.set(http::field::allow, "POST");
    co_return r;
  }
  if (!api_key_ok(req, config_.api_keys)) {
    co_return error_reply(401, "missing or invalid API key (Authorization: Bearer KEY or x-api-key: KEY)",
                          "invalid_api_key");
  }

  auto lookup = [&req](std::string_view name) -> std::optional<std::string_view> {
    auto it = req.find(name);
    if (it == req.end()) {
      return std::nullopt;
    }
    return it->value();
  };
  auto info = protocol::inspect_request(api, protocol::HeaderLookup(lookup), req.body());
  if (!info) {
    co_return error_reply(400, protocol::describe(static_cast<protocol::Errc>(info.error().value())),
                          protocol::to_string(static_cast<protocol::Errc>(info.error().value())));
  }
  rec.stream = info->stream;
  ModelRuntime* model = find_model(info->model);
  if (!model) {
    co_return error_reply(404, fmt::format("The model '{}' does not exist", info->model), "model_not_found");
  }
  ex->model = model;
  rec.model = model->config().name;
  rec.session_source = std::string(session_source_name(info->session_source));
  const int replica_count = model->config().replica_count();
  if (info->pin.state != protocol::PinState::absent && !info->pin.in_range(replica_count)) {
    co_return error_reply(400,
                          fmt::format("the replica pin must be an integer from 0 to {} (X-Warden-Replica or "
                                      "X-data-parallel-rank)",
                                      replica_count - 1),
                          "invalid_pin");
  }

  // Rewrite once: the model name the engine knows, and usage in OpenAI streams (dropped again below if
  // the client did not ask for it).
  protocol::RewriteOptions ro;
  ro.model = model->config().served_model_name;
  ro.force_include_usage = true;
  const protocol::RewriteResult rewritten = protocol::rewrite_request(api, req.body(), info->layout, ro);
  const bool openai_stream =
      info->stream && (api == protocol::ApiKind::openai_chat || api == protocol::ApiKind::openai_completions);
  const bool drop_usage_chunk = openai_stream && !info->include_usage;

  core::RequestFacts facts;
  if (info->session_source != protocol::SessionSource::none) {
    facts.session =
        core::SessionKey{info->session_hash, info->session_source == protocol::SessionSource::fingerprint
                                                 ? core::SessionSource::fingerprint
                                                 : core::SessionSource::explicit_id};
  }
  if (info->pin.state == protocol::PinState::valid) {
    facts.pin = static_cast<core::ReplicaIndex>(info->pin.replica);
  }
  facts.prompt_tokens =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(info->prompt_tokens_estimate, 1u << 30));
  const bool counting_only = api == protocol::ApiKind::anthropic_count_tokens;

  // The client's header: the engine's, minus hop-by-hop fields, plus the warden's own.
  auto client_header = [&](const http::response_header<>& from) {
    http::response_header<> head;
    head.result(from.result());
    head.version(req.version());
    copy_response_headers(from, head);
    head.set("x-warden-replica", std::to_string(rec.replica));
    head.set("x-warden-route", rec.route);
    return head;
  };

  std::optional<net::UpstreamResponse> upstream;
  std::optional<net::BodyPiece> first;  // a stream's first piece, read before answering
  net::StreamReply reply;               // a stream's answer, prepared while the engine prefills
  Clock::time_point header_at;
  Clock::time_point first_at;
  unsigned failed_status = 502;  // the last attempt's failure, for the client if no retry is possible
  std::string failed_message;
  for (int attempt = 0; attempt < 2 && !upstream; ++attempt) {
    const auto now = Clock::now().time_since_epoch();
    // The live view as is; a copy only for a retry, which must not go back to the replica that failed.
    const std::vector<core::ReplicaMetrics>& live = model->metrics();
    std::vector<core::ReplicaMetrics> without_failed;
    if (attempt > 0 && rec.replica >= 0) {
      without_failed = live;
      without_failed[static_cast<std::size_t>(rec.replica)].healthy = false;
    }
    const std::vector<core::ReplicaMetrics>& metrics = without_failed.empty() ? live : without_failed;
    core::Decision d;
    if (counting_only) {
      // Counting tokens generates nothing: send it where the conversation lives, without counting it.
      std::optional<core::ReplicaIndex> home;
      if (facts.session) {
        home = model->router().home_of(facts.session->hash, now);
      }
      if (facts.pin) {
        d = core::Decision{facts.pin, core::Route::pinned};
      } else if (home && metrics[*home].healthy) {
        d = core::Decision{home, core::Route::sticky};
      } else {
        d = core::decide_balanced(model->router().snapshot(metrics, now), core::RequestFacts{}, rng_);
      }
    } else {
      d = model->router().route(facts, metrics, now, rng_);
      ex->routed = d.ok();
    }
    if (!d.ok() && attempt > 0) {
      // Nowhere else to go: the client hears what went wrong with the replica that was tried.
      co_return error_reply(failed_status, failed_message,
                            failed_status == 504 ? "upstream_timeout" : "upstream_error");
    }
    if (!d.ok()) {
      const bool pin_error = d.reason == core::NoReplicaReason::pin_out_of_range;
      co_return error_reply(pin_error ? 400 : 503,
                            pin_error ? "the replica pin is out of range"
                                      : fmt::format("no healthy replica of '{}' is available", rec.model),
                            pin_error ? "invalid_pin" : "no_healthy_replica");
    }
    rec.replica = static_cast<int>(*d.replica);
    rec.route = attempt > 0 ? "failover" : std::string(core::route_name(d.route));

    const UpstreamUrl& url = model->config().replica_url(rec.replica);
    // Named, not a temporary: GCC 12 destroys temporaries of a co_await expression twice.
    const net::Endpoint endpoint{url.host, url.port};
    // Serialized here in one pass: the client's headers (minus hop-by-hop and the warden's own), the
    // rank in DP mode, and the prompt borrowed, not copied (req and rewritten outlive the send).
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
    append_request_headers(req, up.head);
    if (model->config().data_parallel) {
      up.head.append("X-data-parallel-rank: ").append(std::to_string(rec.replica)).append("\r\n");
    }
    up.head.append("Content-Length: ").append(std::to_string(body_size)).append("\r\n\r\n");
    const net::ClientTimeouts timeouts = client_timeouts();
    auto r = co_await pool_.send(endpoint, up, timeouts);
    boost::system::error_code failure;
    bool broke_off = false;  // answered, then broke off before the first event: nothing reached the client
    if (r) {
      header_at = Clock::now();
      if (!is_event_stream(r->header())) {
        upstream.emplace(std::move(*r));
        break;
      }
      // An engine sends its header at once and its first event after the prefill. Waiting for that event
      // (inside the attempt) sends the client header and event in one write, and a replica that breaks
      // off before it has sent the client nothing: the request can still go elsewhere. The client's
      // header is ready before the event arrives.
      reply.header = client_header(r->header());
      if (!req.keep_alive()) {
        reply.header.set(http::field::connection, "close");
      }
      reply.header_with_first_chunk = true;
      net::prepare_header(reply, req.keep_alive());
      auto piece = co_await r->next();
      if (piece) {
        first.emplace(*piece);
        first_at = Clock::now();
        upstream.emplace(std::move(*r));  // the piece points into the connection, which moves along
        break;
      }
      if (piece.error() == asio::error::operation_aborted) {
        throw boost::system::system_error(piece.error());  // the client went away (net::Server cancels)
      }
      failure = piece.error();
      broke_off = true;
    } else {
      failure = r.error();
    }
    const std::string why = broke_off ? fmt::format("broke off before its first event: {}", failure.message())
                                      : failure.message();
    const bool can_retry = (broke_off || retryable(failure)) && attempt == 0 && !facts.pin;
    if (can_retry && ex->routed) {
      // Routed again below: count this request once, by its final route.
      model->router().abandon(d);
      ex->routed = false;
    } else {
      ex->release_replica();
    }
    if (!broke_off && retryable(failure)) {
      // In DP mode every rank sits behind this one server: it is the server that failed.
      if (model->config().data_parallel) {
        model->url_failed(url, why);
      } else {
        model->replica_failed(rec.replica, why);
      }
    }
    spdlog::warn("upstream {} (model {} replica {}) failed: {}{}", url.text, rec.model, rec.replica, why,
                 can_retry ? "; retrying on another replica" : "");
    failed_status = broke_off ? 502 : status_for(failure);
    failed_message = fmt::format("replica {} of '{}' failed: {}", rec.replica, rec.model, why);
    if (!can_retry) {
      co_return error_reply(failed_status, failed_message,
                            failed_status == 504 ? "upstream_timeout" : "upstream_error");
    }
  }

  rec.status = static_cast<int>(upstream->status());
  const bool sse = first.has_value();

  if (!sse) {
    // Copied now: the upstream header lives in the pooled connection, which read_all() may hand back.
    http::response_header<> head = client_header(upstream->header());
    auto body = co_await upstream->read_all(256u << 20);
    if (!body) {
      co_return error_reply(502,
                            fmt::format("replica {} of '{}' broke off its response: {}", rec.replica,
                                        rec.model, body.error().message()),
                            "upstream_error");
    }
    rec.ttfb_s = std::chrono::duration<double>(header_at - ex->started).count();
    if (rec.status == 200 && !counting_only) {
      if (auto u = protocol::parse_usage_body(api, *body)) {
        rec.prompt_tokens = u->prompt_tokens;
        rec.cached_tokens = u->cached_tokens;
        rec.completion_tokens = u->completion_tokens;
      }
    }
    net::Response res{std::move(head)};
    res.body() = std::move(*body);
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    ex->complete = true;
    co_return res;
  }

  auto shared_up = std::make_shared<net::UpstreamResponse>(std::move(*upstream));
  reply.body = [ex, shared_up, api, drop_usage_chunk, first_piece = *first,
                first_at](net::StreamWriter& w) -> asio::awaitable<void> {
    RequestRecord& rec = ex->record;
    std::optional<net::BodyPiece> pending = first_piece;  // valid until the next call on shared_up
    protocol::StreamUsageTracker tracker(api, protocol::StreamUsageTracker::Mode::fast);
    protocol::SseParser parser;
    bool between_events = true;  // the parser holds no unfinished event
    std::optional<Clock::time_point> first_byte;
    std::optional<Clock::time_point> first_content;
    std::string out;
    auto track = [&](std::string_view event, std::string_view data, Clock::time_point arrived) {
      auto ev_info = tracker.on_event(event, data);
      if (ev_info.content && !first_content) {
        first_content = arrived;
      }
      return ev_info;
    };
    bool ok = true;
    while (true) {
      boost::system::result<net::BodyPiece> piece = net::BodyPiece{};
      Clock::time_point arrived = first_at;
      if (pending) {
        piece = *pending;
        pending.reset();
      } else {
        piece = co_await shared_up->next();
        arrived = Clock::now();
      }
      if (!piece) {
        if (w.failed() || piece.error() == asio::error::operation_aborted) {
          ok = false;
          rec.status = 499;
          break;
        }
        spdlog::warn("stream from replica {} of '{}' broke off: {}", rec.replica, rec.model,
                     piece.error().message());
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
      }
      // Bytes that cannot hold any part of a usage chunk to drop go out as they came and are looked at
      // afterwards: the piece starts and ends between events and does not mention usage. Whole events
      // that do, in the plain form engines write, go out with the usage chunk cut out by its byte range.
      // Otherwise the events are parsed first and the kept ones relayed (an unfinished event waits in
      // the parser).
      const bool clean_end = piece->data.ends_with("\n\n");
      const bool whole_events = between_events && clean_end;
      const bool pass =
          !drop_usage_chunk || (whole_events && piece->data.find("usage") == std::string_view::npos);
      between_events = clean_end;
      std::optional<std::vector<std::pair<std::size_t, std::size_t>>> cut;
      if (!pass && whole_events) {
        cut = protocol::locate_usage_only_events(piece->data);
      }
      if (cut) {
        out.clear();
        std::size_t at = 0;
        for (const auto& [begin, end] : *cut) {
          out.append(piece->data.substr(at, begin - at));
          at = end;
        }
        out.append(piece->data.substr(at));
      }
      // The rare rest (an event cut between reads, CR line ends, other fields): parsed before the write.
      const bool parse_first = !pass && !cut;
      if (parse_first) {
        parser.capture_raw(true);
        out.clear();
        const auto fed = parser.feed(piece->data, [&](const protocol::SseEvent& ev) {
          if (!track(ev.event, ev.data, arrived).usage_only) {
            out += ev.raw;
          }
        });
        if (!fed) {
          ok = false;  // an event too large to inspect: the stream cannot be filtered safely
          break;
        }
      }
      const std::string_view send = pass ? piece->data : std::string_view(out);
      // The end of the upstream body came with these bytes: end the client's body in the same write.
      // Two statements, not a conditional: GCC 12 destroys a temporary awaitable in `c ? a : b` twice.
      boost::system::error_code ec;
      if (piece->last) {
        ec = co_await w.write_last(send);
      } else if (!send.empty()) {
        ec = co_await w.write(send);
      }
      if (!parse_first) {
        parser.capture_raw(false);
        const auto fed = parser.feed(
            piece->data, [&](const protocol::SseEvent& ev) { track(ev.event, ev.data, arrived); });
        if (!fed && drop_usage_chunk && !ec) {
          ok = false;  // an event too large to inspect: the stream cannot be filtered safely
          break;
        }
      }
      if (ec) {
        shared_up->abort();  // the client is gone: the engine must learn it now
        ok = false;
        rec.status = 499;
        break;
      }
    }
    if (!ok) {
      shared_up->abort();
    }
    const auto ttfb_point = first_content ? first_content : first_byte;
    if (ttfb_point) {
      rec.ttfb_s = std::chrono::duration<double>(*ttfb_point - ex->started).count();
    }
    if (auto u = tracker.usage()) {
      rec.prompt_tokens = u->prompt_tokens;
      rec.cached_tokens = u->cached_tokens;
      rec.completion_tokens = u->completion_tokens;
    }
    if (!ok && rec.status == 200) {
      // The client went away (499), or the engine broke off the stream (502: the client saw it truncated).
      rec.status = w.failed() ? 499 : 502;
    }
    ex->complete = ok || rec.status == 502;
  };
  co_return reply;
}

}  // namespace warden::gateway
