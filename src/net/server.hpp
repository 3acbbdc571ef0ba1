#pragma once
// HTTP/1.1 server on Boost.Beast + Asio C++20 coroutines.
//
// One coroutine per connection (keep-alive, pipelined bytes are kept for the next request), a body limit
// (413), a header/body read timeout (408 or a silent close) and an idle keep-alive timeout. Handlers are
// coroutines that *return* a Reply; only the session loop touches the socket:
//
//   net::Server server(ioc, opts, [](net::Request& req, const net::ConnectionInfo& c)
//                                     -> asio::awaitable<net::Reply> {
//     if (req.target() == "/health") co_return net::make_response(req, 200, "", "text/plain");
//     net::StreamReply s = net::sse_reply(req);          // header sent first, then chunks
//     s.body = [](net::StreamWriter& w) -> asio::awaitable<void> {
//       if (auto ec = co_await w.write("data: 1\n\n")) co_return;   // client gone
//     };
//     co_return s;
//   });
//   auto ep = server.listen();  // binds (port 0 → ephemeral), returns the bound endpoint
//   asio::co_spawn(ioc, server.run(), asio::detached);
//
// Disconnect → cancellation: while the handler and then a stream body run, the session also waits for
// the client's socket to become readable; EOF or an error there emits terminal cancellation on the
// session coroutine (which runs the handler and body inline), so any Asio/Beast operation it is
// suspended in (an upstream read, a timer, a net::Notifier wait) completes with operation_aborted and the
// next co_await throws. A proxy therefore closes its upstream connection at once, and the engine learns
// the client went away. Handlers must not catch operation_aborted and continue.
//
// Threading: a Server and its sessions live on the executor they were created with; run the io_context
// on one thread (as every LM Warden server does: docs/architecture.md, "Threads"). Not thread-safe.

#include "net/http.hpp"
#include "net/tls.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace warden::net {

/// What a request let through by ServerOptions::on_header may send: a body of at most `max_bytes` (at most
/// the server's max_body_bytes; larger is answered 413 from the header), counted against the shared
/// in-flight budget or not. A request the server cannot yet trust (no credential, an endpoint that takes
/// no large body) should not draw on the budget the trusted ones share.
struct BodyAllowance {
  std::size_t max_bytes = 0;
  bool shared_budget = false;
};
using HeaderVerdict = std::variant<Response, BodyAllowance>;

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;                           // 0 = ephemeral; listen() returns the real one
  std::size_t max_body_bytes = 32u << 20;           // larger bodies get 413 (and the connection is closed)
  std::size_t max_header_bytes = 64u << 10;         // larger headers get 431
  std::chrono::milliseconds read_timeout{30'000};   // a whole request (header + body) must arrive in this
  std::chrono::milliseconds idle_timeout{75'000};   // keep-alive connection with no request: closed
  std::chrono::milliseconds write_timeout{60'000};  // one write (response or chunk) blocked this long: gone
  /// After a refusal that closes the connection (413, 401, 503, ...), how long the rest of what the client
  /// sends is still read and dropped, so that it reads the answer instead of a reset (0: close at once).
  std::chrono::milliseconds linger_timeout{5'000};
  int backlog = 1024;
  bool reuse_port = false;  // SO_REUSEPORT (several processes sharing one port)
  // Overload bounds: a request on a connection beyond max_connections gets 503 (twice as many are closed
  // unanswered); one whose body would take the bodies being read or handled over the budget gets 503.
  std::size_t max_connections = 4096;
  std::size_t max_inflight_body_bytes = std::size_t{256} << 20;
  /// After the first SIGTERM/SIGINT/SIGQUIT (run_until_signal): how long requests in flight may still finish.
  /// 0: stop at once.
  std::chrono::milliseconds drain_grace{0};
  /// The 413 answer for `request` (its header only: the body was not read), whose body would be larger
  /// than `limit` (the server's, or what on_header allowed it), e.g. an error in the API format its path
  /// implies; default is a short OpenAI error object.
  std::function<Response(const http::request_header<>& request, std::size_t limit, bool keep_alive)>
      make_too_large;
  /// The server's own refusals other than 413 (400, 431, 503 when draining or over a bound), in the
  /// format the request's path implies. `code`: malformed, header_too_large, draining, overloaded.
  /// The server adds Retry-After to a 503 and closes the connection. Default: an OpenAI error object.
  std::function<Response(const http::request_header<>& request, unsigned status, std::string_view message,
                         std::string_view code)>
      make_error;
  /// Runs once a request's header is in, before any of its body is read (and before 100 Continue), and
  /// before its body is weighed against the in-flight budget: a Response here is the answer (e.g. 401
  /// for a missing key) and the connection closes after it; a BodyAllowance is what its body may be.
  /// Without on_header every request may have a body of max_body_bytes drawn on the budget.
  std::function<HeaderVerdict(const http::request_header<>& request)> on_header;
  /// Runs once when drain() begins, e.g. to end waits that no finishing request would end.
  std::function<void()> on_drain;
  /// A connection to the TLS listener that never became a TLS connection: `kind` is "plain_http" (its first
  /// bytes were not a TLS handshake: answered 400 in plain text, as nginx does) or "handshake" (the
  /// handshake failed or timed out). Also logged, at most once a second.
  std::function<void(std::string_view kind)> on_tls_failure;
};

struct ConnectionInfo {
  std::uint64_t id = 0;  // 1, 2, ... in accept order (per Server)
  tcp::endpoint remote;
  std::uint64_t request_index = 0;  // 0 for the first request on this connection
};

/// Streams a response body as HTTP/1.1 chunks. Each write() sends one chunk and returns once it is on
/// the wire (no buffering beyond the kernel's), so SSE events reach the client as they happen.
class StreamWriter {
 public:
  /// Sends one chunk (empty data is ignored). Returns an error if the client is gone or the write timed
  /// out; after an error every later write fails at once. Never throws except on cancellation.
  virtual asio::awaitable<boost::system::error_code> write(std::string_view data) = 0;
  /// Sends `data` (may be empty) and the terminating chunk in one write: the body is complete, later
  /// writes fail. Saves the session a separate write (and the client a wake-up) for the end of the body.
  virtual asio::awaitable<boost::system::error_code> write_last(std::string_view data) = 0;
  /// Ends the body as broken: the connection is closed after what was written, without the terminating
  /// chunk, so the client cannot take a cut-off body for a complete one. Later writes fail.
  virtual void abort() noexcept = 0;
  /// True once a write failed or the client was seen to disconnect.
  virtual bool failed() const noexcept = 0;
  /// True once the server stopped with this stream in flight (the drain's grace ran out, or a second
  /// signal): the body has been cancelled. It may still write one last event to say so, after
  /// `co_await asio::this_coro::reset_cancellation_state()`, then abort(); the connection is closed
  /// shortly after either way.
  virtual bool cut() const noexcept = 0;
  virtual std::uint64_t bytes_written() const noexcept = 0;

 protected:
  ~StreamWriter() = default;
};

/// A response whose header is sent first and whose body is produced by a coroutine in chunks
/// (Transfer-Encoding: chunked is set by the session; any Content-Length in `header` is removed).
struct StreamReply {
  http::response_header<> header;
  std::function<asio::awaitable<void>(StreamWriter&)> body;
  /// Hold the header back and send it in one write with the first chunk (or the end of the body). Only
  /// for a body whose first bytes are already at hand (a relay with bytes buffered): otherwise the client
  /// would wait for the header as long as for the first chunk.
  bool header_with_first_chunk = false;
  /// The header as it goes on the wire, once prepare_header() ran (the session runs it if nobody did).
  std::string header_text;
  bool keep_alive = true;  // after prepare_header(): whether the connection stays open after the body
};

/// Fixes the header for a chunked body and the connection's keep-alive (the client's wish, `keep_alive`,
/// and the header's own) and serializes it into header_text. A relay calls it while it waits for its
/// first chunk, so that the serializing is not on the way of the first bytes.
void prepare_header(StreamReply& reply, bool keep_alive);

using Reply = std::variant<Response, StreamReply>;
using Handler = std::function<asio::awaitable<Reply>(Request&, const ConnectionInfo&)>;

/// A full response with the request's version and keep-alive, Content-Length set.
Response make_response(const Request& req, unsigned status, std::string body,
                       std::string_view content_type = "application/json");
/// A streaming reply for Server-Sent Events (text/event-stream, no-cache) with the request's keep-alive.
StreamReply sse_reply(const Request& req, unsigned status = 200);

struct ServerStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_open = 0;
  std::uint64_t requests = 0;
  std::uint64_t client_disconnects = 0;      // handler/stream cancelled because the client went away
  std::uint64_t handler_errors = 0;          // exceptions escaping a handler (answered 500 when possible)
  std::uint64_t accept_failures = 0;         // failed accepts (descriptors exhausted, ...)
  std::uint64_t tls_handshake_failures = 0;  // TLS connections that ended before their handshake did
};

class Server {
 public:
  Server(asio::io_context& ioc, ServerOptions opts, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Opens, binds and listens. Returns the bound endpoint (the real port when opts.port == 0).
  Result<tcp::endpoint> listen();
  /// The accept loop; returns after stop(). Spawn it on the io_context.
  asio::awaitable<void> run();
  /// Stops accepting and cancels every connection (in-flight handlers and streams see cancellation; a
  /// stream body gets a moment to end its stream with an error event: StreamWriter::cut()). Idempotent.
  /// run() returns once the acceptor is closed; sessions unwind on their own.
  void stop();
  /// Graceful shutdown, first half: stops accepting; requests in flight run on (their responses close
  /// the connection), new requests on open connections get 503 + Retry-After. `drained` is posted once
  /// no request is in flight; then call stop(). Idempotent.
  void drain(std::function<void()> drained);
  bool draining() const noexcept { return draining_; }
  /// Requests between their header and the end of their response.
  std::size_t requests_in_flight() const noexcept { return busy_; }

  const ServerStats& stats() const noexcept { return stats_; }
  const ServerOptions& options() const noexcept { return opts_; }

  /// TLS for the connections accepted from now on (net/tls.hpp; null: plain HTTP, the default). Open
  /// connections keep the context they were accepted with: a renewed certificate takes over without a
  /// restart and without cutting a stream.
  void set_tls(std::shared_ptr<TlsContext> ctx) { tls_ = std::move(ctx); }
  bool tls() const noexcept { return tls_ != nullptr; }

 private:
  class Connection;
  struct DisconnectWatch;
  asio::awaitable<void> session(tcp::socket socket, std::uint64_t id, std::shared_ptr<DisconnectWatch> watch,
                                std::shared_ptr<TlsContext> tls);

  asio::io_context& ioc_;
  ServerOptions opts_;
  Handler handler_;
  std::shared_ptr<TlsContext> tls_;
  tcp::acceptor acceptor_;
  ServerStats stats_;
  std::uint64_t next_id_ = 1;
  std::list<Connection*> connections_;  // live connections, for stop()
  bool stopped_ = false;
  bool draining_ = false;
  std::function<void()> drained_;
  std::size_t busy_ = 0;                 // requests in flight
  std::size_t handshaking_ = 0;          // TLS connections still in their handshake (count as open)
  std::size_t inflight_body_bytes_ = 0;  // bodies in flight (a Content-Length, or a chunked body so far)
  std::uint64_t accept_failures_unlogged_ = 0;
  std::chrono::steady_clock::time_point accept_logged_at_{};
  std::uint64_t tls_failures_unlogged_ = 0;
  std::chrono::steady_clock::time_point tls_logged_at_{};
  void accept_failed(const boost::system::error_code& ec);
  void tls_failed(std::uint64_t id, const tcp::endpoint& remote, std::string_view kind, std::string_view why);
  void request_done(std::size_t body_bytes);
  void check_drained();
};

/// Runs `server` on `ioc` until SIGTERM, SIGINT or SIGQUIT: binds, prints exactly one line
/// "listening on http://HOST:PORT" (https with TLS) to stdout (flushed), accepts until such a signal, then
/// drains for up to options().drain_grace (a second one cuts at once), stops the server, calls `on_stop`
/// (e.g. to stop the sim's steppers) and returns 0 once the io_context is out of work. SIGHUP calls
/// `on_reload` (logged and ignored without one); SIGUSR1 and SIGUSR2 are logged and ignored; SIGPIPE is
/// ignored (a write to a peer that left fails instead). Returns 1 (after logging) if binding fails.
int run_until_signal(asio::io_context& ioc, Server& server, std::function<void()> on_stop = {},
                     std::function<void()> on_reload = {});

}  // namespace warden::net
