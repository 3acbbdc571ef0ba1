// One request's way through the warden (docs/architecture.md, "Where the request path lives"): admit (the
// method, the key, one inspection of the body, the model, the output cap, the rewrite) → forward (placed
// by its Placement, which may hold it in the model's admission queue; send; await the first event; once
// more elsewhere if the replica failed before answering) → the whole response, or the stream relayed.
// Every request ends as its Exchange does: counted, recorded in the stats, logged. The proxy moves the bytes;
// where they go is the placement's (gateway/placement/). It sees the rest of the warden only through its
// ProxyContext. Runs on the gateway's I/O thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "gateway/proxy/exchange.hpp"
#include "gateway/shared/shared_homes.hpp"
#include "net/client.hpp"
#include "net/server.hpp"

namespace warden::protocol {
class StreamRelay;
struct RequestInfo;
struct RewriteOptions;
}  // namespace warden::protocol

namespace warden::gateway {

class Proxy {
 public:
  Proxy(net::asio::any_io_executor io, ProxyContext context);

  // An inference request (the path names an API), answered.
  net::asio::awaitable<net::Reply> handle(net::Request& req);
  // With `state: { redis }` (set by the gateway's start()): conversations placed with the other wardens.
  void share_homes(SharedHomes* shared) { shared_ = shared; }
  // What new upstream connections are verified with (at start and at every reload).
  void set_upstream_tls(std::shared_ptr<net::TlsContext> tls) { pool_.set_tls(std::move(tls)); }
  void close_idle() { pool_.close_idle(); }

 private:
  using StreamBody = std::function<net::asio::awaitable<void>(net::StreamWriter&)>;
  using Clock = std::chrono::steady_clock;

  std::optional<net::Response> admit(net::Request& req, Exchange& ex, Outgoing& out);
  std::optional<Refusal> fit_output(const Exchange& ex, const protocol::RequestInfo& info,
                                    protocol::RewriteOptions& ro);
  // Placed (`defer_hold`: a stream admission holds returns false with at.held, for held_reply()), then
  // sent.
  net::asio::awaitable<bool> forward(Exchange& ex, const net::Request& req, const Outgoing& out, int attempt,
                                     Attempt& at, bool defer_hold = false);
  // One placed attempt sent: true with the engine's answer in `at` (its first event for a stream).
  net::asio::awaitable<bool> send(Exchange& ex, const net::Request& req, const Outgoing& out, int attempt,
                                  Attempt& at);
  // A stream admission holds (proxy_held.cpp): its response starts now (200, text/event-stream) and the
  // API's keep-alive event goes out while it waits, so no client or proxy in between times out; placed,
  // the engine's events follow, and a failure reaches the client as an error event.
  net::StreamReply held_reply(std::shared_ptr<Exchange> ex, const net::Request& req, Outgoing out);
  net::asio::awaitable<void> held_body(std::shared_ptr<Exchange> ex, const net::Request& req,
                                       std::shared_ptr<const Outgoing> out, net::StreamWriter& w);
  static net::asio::awaitable<void> held_without_stream(Exchange& ex, Attempt& at, net::StreamWriter& w);
  static net::asio::awaitable<void> held_failed(Exchange& ex, const Refusal& why, net::StreamWriter& w);
  // A stream's first event awaited (true: at.first), its client header prepared meanwhile.
  net::asio::awaitable<bool> first_event(Exchange& ex, const net::Request& req, int attempt, Attempt& at,
                                         const UpstreamUrl& url, net::UpstreamResponse& r,
                                         net::Recall& recall);
  // An engine's 400 read: relayed as it is, the client's context error (refuse), or to be sent again
  // with the output cap the engine's figures give (resend); failed: the read broke off.
  enum class Refit { relay, refuse, resend, failed };
  net::asio::awaitable<Refit> refit(Exchange& ex, const net::Request& req, const Outgoing& out, int attempt,
                                    Attempt& at, const UpstreamUrl& url, net::UpstreamResponse& r);
  void attempt_failed(Exchange& ex, int attempt, Attempt& at, const UpstreamUrl& url,
                      const boost::system::error_code& failure, bool broke_off);
  net::asio::awaitable<net::Response> whole_response(Exchange& ex, const net::Request& req,
                                                     const Outgoing& out, Attempt& at);
  static StreamBody relay_body(std::shared_ptr<Exchange> ex, net::UpstreamResponse upstream,
                               bool drop_usage_chunk, net::BodyPiece first, Clock::time_point first_at);
  static net::asio::awaitable<void> relay_stream(std::shared_ptr<Exchange> ex,
                                                 std::shared_ptr<net::UpstreamResponse> up,
                                                 bool drop_usage_chunk, net::BodyPiece first,
                                                 Clock::time_point first_at, net::StreamWriter& w);
  static net::asio::awaitable<boost::system::error_code> write_step(net::StreamWriter& w,
                                                                    std::string_view send, bool last);
  static void stream_broke(RequestRecord& rec, const net::StreamWriter& w,
                           const boost::system::error_code& ec);
  static net::asio::awaitable<void> break_stream(Exchange& ex, const protocol::StreamRelay& relay,
                                                 net::StreamWriter& w);
  static void end_stream(Exchange& ex, net::UpstreamResponse& up, const protocol::StreamRelay& relay, bool ok,
                         bool client_failed, std::optional<Clock::time_point> first_token);
  net::ClientTimeouts client_timeouts() const;

  ProxyContext ctx_;
  net::ClientPool pool_;           // connections to the engines
  SharedHomes* shared_ = nullptr;  // with `state: { redis: ... }` only
};

}  // namespace warden::gateway
