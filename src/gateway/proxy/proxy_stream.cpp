// The proxy's stream relay (proxy.hpp): the engine's events to the client as they come, filtered, with
// the usage counted and a break made visible.
#include <spdlog/spdlog.h>

#include <boost/asio/this_coro.hpp>

#include "gateway/proxy/proxy.hpp"
#include "protocol/stream_relay.hpp"

namespace warden::gateway {

namespace asio = net::asio;

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
  const WaitingRequests::Entry relaying = ex->ctx.guard.relay(*ex->model, rec.replica, stalled);
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
      stream_broke(rec, w, piece.error());
      if (rec.stream_break == "shutdown") {
        // The server cancelled this body and lets it write one last event.
        co_await asio::this_coro::reset_cancellation_state();
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
      ex->placement.first_token();
    }
    const protocol::StreamRelay::Step step = relay.feed(piece->data);
    note_content(arrived);
    if (step.stop) {
      ok = false;  // an event too large to inspect: the stream cannot be filtered safely
      rec.stream_break = "filter";
      break;
    }
    const boost::system::error_code ec = co_await write_step(w, step.send, piece->last);
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

// The bytes of one step to the client. The end of the upstream body came with them (`last`): the client's
// body ends in the same write.
asio::awaitable<boost::system::error_code> Proxy::write_step(net::StreamWriter& w, std::string_view send,
                                                             bool last) {
  // Two statements, not a conditional: GCC 12 destroys a temporary awaitable in `c ? a : b` twice.
  boost::system::error_code ec;
  if (last) {
    ec = co_await w.write_last(send);
  } else if (!send.empty()) {
    ec = co_await w.write(send);
  }
  co_return ec;
}

// The engine's stream ended before its end: why, in the record.
void Proxy::stream_broke(RequestRecord& rec, const net::StreamWriter& w,
                         const boost::system::error_code& ec) {
  if (ec == net::ClientErrc::recalled) {
    spdlog::warn("stream from replica {} of '{}' cut: the replica was ejected as stalled", rec.replica,
                 rec.model);
    rec.stream_break = "stalled";
  } else if (w.cut()) {
    rec.stream_break = "shutdown";  // the warden stopped before the engine's end (the drain ran out)
  } else if (w.failed() || ec == asio::error::operation_aborted) {
    rec.status = 499;
  } else {
    spdlog::warn("stream from replica {} of '{}' broke off: {}", rec.replica, rec.model, ec.message());
    rec.stream_break = ec == net::ClientErrc::idle_timeout ? "timeout" : "engine";
  }
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
    ex.placement.judge(std::nullopt);
  } else if (rec.stream_break == "timeout" || rec.stream_break == "engine") {
    ex.placement.judge(rec.stream_break == "timeout" ? core::OutlierReason::stream_stall
                                                     : core::OutlierReason::gateway_error);
  }
  if (!ok && rec.status == 200) {
    // The client went away (499), or the engine broke off the stream (502: the client saw it truncated).
    rec.status = client_failed ? 499 : 502;
  }
  ex.complete = ok || rec.status == 502;
}

}  // namespace warden::gateway
