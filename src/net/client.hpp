#pragma once
// Upstream HTTP/1.1 client: keep-alive connection pool per host:port, streaming response reading, and
// the timeouts a proxy needs (connect, first byte, idle between body pieces).
//
//   net::ClientPool pool(ioc.get_executor());
//   net::Request req{http::verb::post, "/v1/chat/completions", 11};
//   req.set(http::field::content_type, "application/json");
//   req.body() = body; req.prepare_payload();
//   auto r = co_await pool.send(*net::parse_http_url("http://127.0.0.1:8000"), std::move(req));
//   if (!r) { ... r.error() is a net::ClientErrc (connect_failed, first_byte_timeout, ...) ... }
//   net::UpstreamResponse& up = *r;                       // header is in, body not yet read
//   while (true) {
//     auto piece = co_await up.next();                     // one piece as it arrives
//     if (!piece) break;                                   // idle_timeout, reset, bad framing ...
//     if (piece->done) break;                              // end of body: connection back to the pool
//     relay(piece->data);
//   }
//
// Cancellation: if the coroutine awaiting send()/next() is cancelled (e.g. the downstream client went
// away, see net::Server), the pending read is aborted and the connection is closed, never reused —
// that is how the engine behind it learns to abort the request. Destroying an UpstreamResponse before
// its body is complete closes the connection too (call abort() to make that explicit).
//
// Threading: a pool and its responses belong to the executor they were created with (one thread).

#include "net/http.hpp"
#include "net/tls_context.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace warden::net {

enum class ClientErrc {
  ok = 0,
  bad_url,                 // not http://host:port[/...]
  resolve_failed,          // host name did not resolve
  connect_failed,          // refused / unreachable
  connect_timeout,         // no connection within ClientTimeouts::connect
  write_timeout,           // request not sent within ClientTimeouts::write
  first_byte_timeout,      // response header not complete within ClientTimeouts::first_byte
  idle_timeout,            // no body bytes for ClientTimeouts::idle
  closed_before_response,  // connection closed/reset before a complete response header
  closed_mid_body,         // connection closed/reset before the body was complete
  bad_response,            // malformed HTTP from upstream
  body_too_large,          // read_all() limit exceeded
  recalled,                // the caller recalled the request before its response (see Recall)
  tls_failed,              // https: the handshake failed (certificate not trusted, wrong name, ...)
};

const boost::system::error_category& client_category() noexcept;
inline boost::system::error_code make_error_code(ClientErrc e) noexcept {
  return {static_cast<int>(e), client_category()};
}

struct Endpoint {
  std::string host;  // name or address as given
  std::uint16_t port = 80;
  bool tls = false;  // https: TLS with the pool's context, the certificate checked for `host`
  /// "host:port", the Host header value.
  std::string key() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

/// "http://host:port[/path]" or "https://..." → Endpoint (the path is ignored; port 80 or 443 when absent).
Result<Endpoint> parse_http_url(std::string_view url);

struct ClientTimeouts {
  std::chrono::milliseconds connect{5'000};
  std::chrono::milliseconds write{30'000};
  /// Request sent → complete response header. Long by default: a 50k-token prefill behind a queue.
  std::chrono::milliseconds first_byte{600'000};
  /// Longest gap between two body pieces.
  std::chrono::milliseconds idle{120'000};
};

struct PoolOptions {
  std::size_t max_idle_per_host = 64;
  std::chrono::milliseconds max_idle_age{30'000};  // idle connections older than this are not reused
  std::size_t read_buffer_bytes = 16u << 10;       // per connection; bounds memory per open stream
  std::size_t max_header_bytes = 64u << 10;
  /// What https endpoints are verified with (make_client_tls); null: the system's CA store, made at the
  /// first https connection.
  std::shared_ptr<TlsContext> tls;
};

namespace detail {
struct Connection;
struct PoolState;
struct RecallScope;
}  // namespace detail

/// Ends a wait for an engine from outside the coroutine that waits: pass one to send() and next(), and
/// recall() makes the pending call return at once with operation_aborted (the connection is closed), which
/// the caller tells from its own cancellation by recalled(). A proxy recalls the requests waiting for the
/// first byte of a replica that was just marked unhealthy, to send them elsewhere.
class Recall {
 public:
  void recall() noexcept {
    recalled_ = true;
    if (socket_ != nullptr) {
      boost::system::error_code ignored;
      socket_->cancel(ignored);
    }
  }
  bool recalled() const noexcept { return recalled_; }

 private:
  friend struct detail::RecallScope;
  tcp::socket* socket_ = nullptr;  // the connection a send() or next() waits on, while it waits
  bool recalled_ = false;
};

struct BodyPiece {
  std::string_view data;  // valid until the next call on the UpstreamResponse
  bool done = false;      // end of body (data is empty then)
  bool last = false;      // data ends the body: the next call returns done without waiting
};

class UpstreamResponse {
 public:
  UpstreamResponse(UpstreamResponse&&) noexcept;
  UpstreamResponse& operator=(UpstreamResponse&&) noexcept;
  ~UpstreamResponse();

  unsigned status() const noexcept;
  const http::response_header<>& header() const noexcept;
  /// True if the connection was freshly opened for this request (false: reused from the pool).
  bool fresh_connection() const noexcept { return fresh_; }

  /// The next piece of the body as it arrives (chunked, Content-Length or until close): every body byte
  /// already received (several chunks concatenated, up to read_buffer_bytes), else waits for more. Returns
  /// {.done = true} at the end (the connection then returns to the pool if keep-alive allows).
  asio::awaitable<Result<BodyPiece>> next(Recall* recall = nullptr);
  /// Reads the rest of the body into one string (body_too_large past `limit`).
  asio::awaitable<Result<std::string>> read_all(std::size_t limit = 64u << 20);
  bool done() const noexcept { return done_; }
  /// Closes the connection now (no reuse). Safe to call at any time.
  void abort() noexcept;

 private:
  friend class ClientPool;
  friend class SyncClient;
  UpstreamResponse(std::unique_ptr<detail::Connection> c, std::weak_ptr<detail::PoolState> pool, bool fresh,
                   ClientTimeouts t);
  void release() noexcept;

  std::unique_ptr<detail::Connection> conn_;
  std::weak_ptr<detail::PoolState> pool_;
  ClientTimeouts timeouts_;
  bool fresh_ = true;
  bool done_ = false;
};

struct PoolStats {
  std::uint64_t connects = 0;       // new connections opened
  std::uint64_t reuses = 0;         // requests sent on a pooled connection
  std::uint64_t stale_retries = 0;  // reused connection was dead before any response byte: retried fresh
  std::uint64_t aborted = 0;        // connections closed before their body was complete
};

class ClientPool {
 public:
  explicit ClientPool(asio::any_io_executor ex, PoolOptions opts = {});
  ~ClientPool();
  ClientPool(const ClientPool&) = delete;
  ClientPool& operator=(const ClientPool&) = delete;

  /// Sends `req` (Host is set if missing; Content-Length from the body if not set) and reads the
  /// response header. A reused keep-alive connection that turns out dead before any response byte is
  /// retried once on a fresh connection (safe: the upstream never saw a complete request there).
  asio::awaitable<Result<UpstreamResponse>> send(const Endpoint& ep, Request req, ClientTimeouts t = {});
  /// The same for a request the caller serialized itself (see RawRequest). `ep` and `req` are borrowed:
  /// they must outlive the co_await.
  asio::awaitable<Result<UpstreamResponse>> send(const Endpoint& ep, const RawRequest& req,
                                                 ClientTimeouts t = {}, Recall* recall = nullptr) {
    return send_impl(ep, req, t, recall);
  }
  /// What https endpoints are verified with from now on (PoolOptions::tls); open connections keep theirs.
  void set_tls(std::shared_ptr<TlsContext> ctx);
  std::size_t idle_connections() const noexcept;
  void close_idle() noexcept;
  const PoolStats& stats() const noexcept;

 private:
  asio::awaitable<Result<UpstreamResponse>> send_impl(const Endpoint& ep, const RawRequest& req,
                                                      ClientTimeouts t, Recall* recall = nullptr);
  std::shared_ptr<detail::PoolState> state_;
};

}  // namespace warden::net

template <>
struct boost::system::is_error_code_enum<warden::net::ClientErrc> : std::true_type {};
