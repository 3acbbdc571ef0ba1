// A stream admission holds (proxy.hpp, held_reply()): answered at once, kept alive while it waits, then
// relayed like any stream. A held request sends nothing for minutes otherwise, and a client (Claude Code's
// API_TIMEOUT_MS, Codex's stream idle timeout) or a proxy in between (an idle timeout of 60 s) gives up on
// it; with its response started the hold's bound is the operator's (task_admission.stream_max_wait).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/proxy/http_util.hpp"
#include "gateway/proxy/proxy.hpp"
#include "protocol/error_body.hpp"
#include "protocol/stream_relay.hpp"

namespace warden::gateway {

namespace asio = net::asio;
namespace http = net::http;

namespace {

// Well under the shortest idle timeout of a client's (Claude Code's byte watchdog allows 10 s at least).
constexpr std::chrono::seconds kKeepAliveEvery{5};

asio::awaitable<bool> write_keep_alive(net::StreamWriter& w, std::string_view event) {
  co_return !co_await w.write(event);
}

// Where the request went, known only after its header: the warden's headers again, as SSE comment lines
// (`: x-warden-replica: 2`) that clients ignore and a load tool reads (docs/api.md, "Held streams").
std::string placement_comment(const RequestRecord& rec) {
  http::response_header<> fields;
  set_placement_headers(rec, fields);
  std::string out;
  for (const auto& f : fields) {
    out.append(": ").append(f.name_string()).append(": ").append(f.value()).append("\n");
  }
  out.append("\n");
  return out;
}

}  // namespace

net::StreamReply Proxy::held_reply(std::shared_ptr<Exchange> ex, const net::Request& req, Outgoing out) {
  net::StreamReply reply = net::sse_reply(req, 200);
  reply.header.set("x-warden-route", ex->record.route);
  ex->record.status = 200;
  auto outgoing = std::make_shared<const Outgoing>(std::move(out));
  // `req` outlives the body: the server keeps it until the response ends.
  reply.body = [this, ex = std::move(ex), &req, outgoing = std::move(outgoing)](net::StreamWriter& w) {
    return held_body(ex, req, outgoing, w);
  };
  return reply;
}

asio::awaitable<void> Proxy::held_body(std::shared_ptr<Exchange> ex, const net::Request& req,
                                       std::shared_ptr<const Outgoing> out, net::StreamWriter& w) {
  const std::string_view ping = protocol::stream_keep_alive_event(ex->api);
  Attempt at;
  // Named, not a temporary: GCC 12 destroys temporaries of a co_await expression twice.
  AdmissionQueue::KeepAlive keep_alive = [&w, ping] { return write_keep_alive(w, ping); };
  bool placed = co_await ex->placement.place_held(at, kKeepAliveEvery, std::move(keep_alive));
  for (int attempt = 0;;) {
    if (placed && co_await send(*ex, req, *out, attempt, at)) {
      break;
    }
    if (!at.retry) {
      co_await held_failed(*ex, at.failure, w);
      co_return;
    }
    placed = co_await ex->placement.place(++attempt, at);
  }
  RequestRecord& rec = ex->record;
  rec.status = static_cast<int>(at.read_header ? at.read_header->result_int() : at.upstream->status());
  if (co_await w.write(placement_comment(rec))) {
    at.upstream->abort();
    rec.status = 499;
    co_return;
  }
  if (!at.first) {
    co_await held_without_stream(*ex, at, w);
    co_return;
  }
  auto up = std::make_shared<net::UpstreamResponse>(std::move(*at.upstream));
  co_await relay_stream(ex, up, out->drop_usage_chunk, *at.first, at.first_at, w);
}

// The engine answered the held stream with a whole body (an error: its status is no longer the client's
// to see): the client gets it as an error event with the engine's status and message.
asio::awaitable<void> Proxy::held_without_stream(Exchange& ex, Attempt& at, net::StreamWriter& w) {
  RequestRecord& rec = ex.record;
  net::Result<std::string> body = std::string();
  if (at.read_body) {
    body = std::move(*at.read_body);
  } else {
    body = co_await at.upstream->read_all(1u << 20);
  }
  if (!body) {
    throw_if_client_left(rec, body.error());
  }
  const bool failed = !body || rec.status >= 500;
  ex.placement.judge(failed ? std::optional(core::OutlierReason::gateway_error) : std::nullopt);
  const unsigned status = !body ? 502 : rec.status == 200 ? 502 : static_cast<unsigned>(rec.status);
  const std::string said = body ? protocol::error_message(*body).value_or(body->substr(0, 200)) : "";
  const std::string message =
      !body ? fmt::format("replica {} of '{}' broke off its response: {}", rec.replica, rec.model,
                          body.error().message())
      : rec.status == 200
          ? fmt::format("replica {} of '{}' answered a stream without events", rec.replica, rec.model)
          : fmt::format("replica {} of '{}' answered {}: {}", rec.replica, rec.model, rec.status, said);
  co_await held_failed(ex, {status, message, status < 500 ? "invalid_request_error" : "upstream_error"}, w);
}

// The held stream ends with the error the client would have been answered with: an error event in its
// API's format, then the connection closed without the end of the body (no answer must look complete).
asio::awaitable<void> Proxy::held_failed(Exchange& ex, const Refusal& why, net::StreamWriter& w) {
  RequestRecord& rec = ex.record;
  rec.status = static_cast<int>(why.status);
  ex.complete = true;
  spdlog::warn("held stream of '{}' ends with an error event: {}", rec.model, why.message);
  co_await w.write(
      protocol::stream_error_event(ex.api, why.message, false, static_cast<int>(why.status), why.code));
  w.abort();
}

}  // namespace warden::gateway
