#include "net/client.hpp"

#include "net/buffered_parse.hpp"
#include "net/read_deadline.hpp"
#include "net/tls.hpp"

#include "net/eager_write.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

namespace warden::net {

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

class ClientCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "warden.net.client"; }
  std::string message(int ev) const override {
    switch (static_cast<ClientErrc>(ev)) {
      case ClientErrc::ok:
        return "ok";
      case ClientErrc::bad_url:
        return "bad upstream URL";
      case ClientErrc::resolve_failed:
        return "upstream host did not resolve";
      case ClientErrc::connect_failed:
        return "upstream connect failed";
      case ClientErrc::connect_timeout:
        return "upstream connect timed out";
      case ClientErrc::write_timeout:
        return "sending the request upstream timed out";
      case ClientErrc::first_byte_timeout:
        return "upstream response header timed out";
      case ClientErrc::idle_timeout:
        return "upstream body stalled (idle timeout)";
      case ClientErrc::closed_before_response:
        return "upstream closed the connection before responding";
      case ClientErrc::closed_mid_body:
        return "upstream closed the connection mid-body";
      case ClientErrc::bad_response:
        return "malformed upstream HTTP response";
      case ClientErrc::body_too_large:
        return "upstream body too large";
      case ClientErrc::recalled:
        return "recalled before the upstream responded";
      case ClientErrc::tls_failed:
        return "TLS with the upstream failed (handshake, certificate or its name)";
    }
    return "unknown client error";
  }
};

}  // namespace

const boost::system::error_category& client_category() noexcept {
  static const ClientCategory cat;
  return cat;
}

std::string Endpoint::key() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<Endpoint> parse_http_url(std::string_view url) {
  auto u = boost::urls::parse_uri(url);
  if (!u || (u->scheme() != "http" && u->scheme() != "https") || u->host().empty()) {
    return make_error_code(ClientErrc::bad_url);
  }
  Endpoint ep;
  ep.tls = u->scheme() == "https";
  ep.port = ep.tls ? 443 : 80;
  ep.host = u->host_type() == boost::urls::host_type::ipv6 ? std::string(u->host_ipv6_address().to_string())
                                                           : std::string(u->host());
  if (u->has_port()) {
    if (u->port_number() == 0) {
      return make_error_code(ClientErrc::bad_url);
    }
    ep.port = u->port_number();
  }
  return ep;
}

namespace detail {

// How reading a response header ended: ec, and the bytes read (0: the peer sent nothing at all).
struct HeaderRead {
  boost::system::error_code ec;
  std::size_t received = 0;
};

struct Connection {
  Connection(asio::any_io_executor ex, Endpoint e, std::size_t buf_bytes)
      : stream(ex), endpoint(std::move(e)), body_buf(buf_bytes) {}
  beast::tcp_stream stream;
  ReadDeadline read_deadline{stream.socket()};  // first-byte and idle timeouts of the reads below
  Endpoint endpoint;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::buffer_body>> parser;
  std::vector<char> body_buf;
  std::chrono::steady_clock::time_point idle_since;
  bool pending_done = false;  // last piece returned with the body complete: next call reports done

  // Reads what the socket has (at least a byte) into `buffer`, under the deadline set before: plain
  // socket reads parsed by hand (net/buffered_parse.hpp) cost less per engine event than Beast's composed
  // read with its per-operation timer. Room for half the body buffer: a header and the events behind it
  // arrive in one system call.
  auto read_some() { return stream.socket().async_read_some(buffer.prepare(read_bytes()), use_tuple); }
  std::size_t read_bytes() const noexcept { return std::max<std::size_t>(body_buf.size() / 2, 512); }

  // A fresh parser for the response to the request just sent, and its first-byte deadline.
  void expect_response(std::size_t max_header_bytes, bool head_method, std::chrono::milliseconds first_byte) {
    new_parser(max_header_bytes, head_method);
    read_deadline.expires_after(first_byte);
  }
  void new_parser(std::size_t max_header_bytes, bool head_method) {
    parser.emplace();
    parser->header_limit(static_cast<std::uint32_t>(max_header_bytes));
    parser->body_limit(boost::none);
    if (head_method) {
      parser->skip(true);
    }
  }
  // An interim response (100 Continue, 103 Early Hints) just parsed: the final one follows, parsed by a
  // fresh parser from what is left in the buffer. 101 is final (the warden never asks for an upgrade).
  bool skip_interim(std::size_t max_header_bytes, bool head_method) {
    const unsigned status = parser->get().result_int();
    if (status < 100 || status > 199 || status == 101) {
      return false;
    }
    new_parser(max_header_bytes, head_method);
    return true;
  }

  // Reads and parses the response header under the first-byte deadline expect_response set, interim
  // responses skipped; a deadline that passed reads as beast::error::timeout.
  asio::awaitable<HeaderRead> read_header(std::size_t max_header_bytes, bool head_method) {
    HeaderRead out;
    bool read = true;  // false: an interim response left the next header's bytes in the buffer
    while (!out.ec && !parser->is_header_done()) {
      if (read) {
        auto [rec, n] = co_await read_some();
        buffer.commit(n);
        out.received += n;
        out.ec = rec;
        if (rec == asio::error::operation_aborted && read_deadline.expired()) {
          out.ec = beast::error::timeout;
        }
      }
      if (!out.ec) {
        out.ec = put_buffered(*parser, buffer);  // the header, and the body's start if it has room
      }
      read = true;
      if (!out.ec && parser->is_header_done() && skip_interim(max_header_bytes, head_method)) {
        read = buffer.size() == 0;
      }
    }
    co_return out;
  }

  void close() noexcept {
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.socket().close(ignored);
  }
  // An idle pooled connection is usable only if the peer has not closed it (no EOF, no stray bytes).
  bool looks_alive() noexcept {
    auto& s = stream.socket();
    if (!s.is_open()) {
      return false;
    }
    // One non-blocking peek (MSG_DONTWAIT) instead of toggling the socket mode around it: this runs on
    // every pooled request, and the two extra ioctl calls showed up in a syscall count of the relay.
    char probe;
    ssize_t n = ::recv(s.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
};

// The socket a send() or next() waits on, known to the caller's Recall for the wait. True when the
// request was recalled already (before the wait began).
struct RecallScope {
  RecallScope(Recall* r, tcp::socket& socket) : recall(r) {
    if (recall != nullptr) {
      recall->socket_ = &socket;
    }
  }
  ~RecallScope() {
    if (recall != nullptr) {
      recall->socket_ = nullptr;
    }
  }
  RecallScope(const RecallScope&) = delete;
  RecallScope& operator=(const RecallScope&) = delete;
  bool recalled() const noexcept { return recall != nullptr && recall->recalled(); }
  Recall* recall;
};

constexpr std::chrono::milliseconds kTrustIdleFor{200};

struct PoolState {
  PoolState(asio::any_io_executor e, PoolOptions o) : ex(std::move(e)), opts(o) {}
  asio::any_io_executor ex;
  PoolOptions opts;
  PoolStats stats;
  std::unordered_map<std::string, std::deque<std::unique_ptr<Connection>>> idle;

  // Idle connections by scheme, host and port: an https and an http server may share host:port over time.
  static std::string pool_key(const Endpoint& ep) { return (ep.tls ? "s:" : "") + ep.key(); }

  std::unique_ptr<Connection> take(const Endpoint& ep) {
    auto it = idle.find(pool_key(ep));
    if (it == idle.end()) {
      return nullptr;
    }
    auto now = std::chrono::steady_clock::now();
    while (!it->second.empty()) {
      auto c = std::move(it->second.back());  // most recently used: least likely to be closed
      it->second.pop_back();
      // A connection back from its last response moments ago is trusted without the peek (a system call
      // on every request's path): servers close idle keep-alive connections after seconds, and one that
      // died meanwhile fails before any response byte, which send() retries on a fresh connection.
      const auto idle_for = now - c->idle_since;
      if (idle_for < opts.max_idle_age && (idle_for < kTrustIdleFor || c->looks_alive())) {
        return c;
      }
      c->close();
    }
    return nullptr;
  }

  void give_back(std::unique_ptr<Connection> c) {
    auto& q = idle[pool_key(c->endpoint)];
    c->idle_since = std::chrono::steady_clock::now();
    c->read_deadline.disarm();
    c->parser.reset();
    c->pending_done = false;
    if (c->buffer.size() != 0) {
      c->close();  // bytes beyond the response: the stream is out of sync, never reuse it
      return;
    }
    c->buffer.shrink_to_fit();
    q.push_back(std::move(c));
    while (q.size() > opts.max_idle_per_host) {
      q.front()->close();
      q.pop_front();
    }
  }
};

}  // namespace detail

namespace {

asio::awaitable<Result<std::unique_ptr<detail::Connection>>> connect(detail::PoolState& pool,
                                                                     const Endpoint& ep,
                                                                     const ClientTimeouts& t) {
  auto conn = std::make_unique<detail::Connection>(pool.ex, ep, pool.opts.read_buffer_bytes);
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(ep.host, ec);
  std::vector<tcp::endpoint> targets;
  if (!ec) {
    targets.emplace_back(addr, ep.port);
  } else {
    tcp::resolver resolver(pool.ex);
    auto [rec, results] = co_await resolver.async_resolve(ep.host, std::to_string(ep.port), use_tuple);
    if (rec || results.empty()) {
      co_return make_error_code(ClientErrc::resolve_failed);
    }
    for (const auto& r : results) {
      targets.push_back(r.endpoint());
    }
  }
  conn->stream.expires_after(t.connect);
  auto [cec, cep] = co_await conn->stream.async_connect(targets, use_tuple);
  if (cec) {
    if (cec == asio::error::operation_aborted) {
      co_return cec;
    }
    co_return make_error_code(cec == beast::error::timeout ? ClientErrc::connect_timeout
                                                           : ClientErrc::connect_failed);
  }
  boost::system::error_code ignored;
  conn->stream.socket().set_option(tcp::no_delay(true), ignored);
  conn->stream.expires_never();
  if (ep.tls) {
    if (!pool.opts.tls) {
      auto made = make_client_tls({});
      if (!made) {
        spdlog::error("https upstream {}: {}", ep.key(), made.error());
        co_return make_error_code(ClientErrc::tls_failed);
      }
      pool.opts.tls = std::move(*made);
    }
    auto plain =
        co_await connect_tls(std::move(conn->stream.socket()), pool.opts.tls, ep.host, t.connect, t.write);
    if (!plain) {
      if (plain.error() == asio::error::operation_aborted) {
        co_return plain.error();
      }
      spdlog::warn("https upstream {}: TLS handshake failed: {}", ep.key(), plain.error().message());
      co_return make_error_code(ClientErrc::tls_failed);
    }
    conn->stream.socket() = std::move(*plain);
  }
  ++pool.stats.connects;
  co_return conn;
}

// "METHOD target HTTP/1.1\r\nName: value\r\n...\r\n" in one string.
std::string serialize_head(const http::request_header<>& req) {
  std::string out;
  out.reserve(256);
  out.append(req.method_string()).append(" ").append(req.target()).append(" HTTP/1.1\r\n");
  for (const auto& f : req) {
    out.append(f.name_string()).append(": ").append(f.value()).append("\r\n");
  }
  out.append("\r\n");
  return out;
}

// Header and body pieces: one gathered write.
std::vector<asio::const_buffer> request_buffers(const RawRequest& req) {
  std::vector<asio::const_buffer> parts;
  parts.reserve(1 + req.body.size());
  parts.push_back(asio::buffer(req.head));
  for (std::string_view piece : req.body) {
    parts.push_back(asio::buffer(piece.data(), piece.size()));
  }
  return parts;
}

}  // namespace

// --- UpstreamResponse --------------------------------------------------------------------------------

UpstreamResponse::UpstreamResponse(std::unique_ptr<detail::Connection> c,
                                   std::weak_ptr<detail::PoolState> pool, bool fresh, ClientTimeouts t)
    : conn_(std::move(c)), pool_(std::move(pool)), timeouts_(t), fresh_(fresh) {
  done_ = conn_->parser->is_done();
  if (done_) {
    conn_->pending_done = true;
  }
}

UpstreamResponse::UpstreamResponse(UpstreamResponse&&) noexcept = default;

UpstreamResponse& UpstreamResponse::operator=(UpstreamResponse&& o) noexcept {
  if (this != &o) {
    abort();
    conn_ = std::move(o.conn_);
    pool_ = std::move(o.pool_);
    timeouts_ = o.timeouts_;
    fresh_ = o.fresh_;
    done_ = o.done_;
  }
  return *this;
}

UpstreamResponse::~UpstreamResponse() {
  if (conn_ && done_) {
    release();
  } else {
    abort();
  }
}

unsigned UpstreamResponse::status() const noexcept {
  return conn_ ? conn_->parser->get().result_int() : 0;
}

const http::response_header<>& UpstreamResponse::header() const noexcept {
  static const http::response_header<> empty;
  return conn_ && conn_->parser ? conn_->parser->get().base() : empty;
}

void UpstreamResponse::abort() noexcept {
  if (!conn_) {
    return;
  }
  if (!done_) {
    if (auto p = pool_.lock()) {
      ++p->stats.aborted;
    }
  }
  conn_->close();
  conn_.reset();
  done_ = true;
}

void UpstreamResponse::release() noexcept {
  if (!conn_) {
    return;
  }
  auto p = pool_.lock();
  bool reusable = p && conn_->parser && conn_->parser->is_done() && conn_->parser->keep_alive() &&
                  conn_->stream.socket().is_open();
  if (reusable) {
    p->give_back(std::move(conn_));
  } else {
    conn_->close();
    conn_.reset();
  }
}

asio::awaitable<Result<BodyPiece>> UpstreamResponse::next(Recall* recall) {
  if (!conn_) {
    co_return BodyPiece{{}, true};
  }
  if (conn_->pending_done) {
    done_ = true;
    release();
    co_return BodyPiece{{}, true};
  }
  auto& parser = *conn_->parser;
  const detail::RecallScope scope(recall, conn_->stream.socket());
  if (scope.recalled()) {
    abort();
    co_return make_error_code(ClientErrc::recalled);
  }
  while (true) {
    parser.get().body().data = conn_->body_buf.data();
    parser.get().body().size = conn_->body_buf.size();
    // What is buffered first; the socket only when that gave no body byte.
    boost::system::error_code ec = put_buffered(*conn_->parser, conn_->buffer);
    if (!ec && !parser.is_done() && parser.get().body().size == conn_->body_buf.size()) {
      conn_->read_deadline.expires_after(timeouts_.idle);
      auto [rec, n] = co_await conn_->read_some();
      conn_->buffer.commit(n);
      ec = rec;
      if (rec == asio::error::eof) {
        parser.put_eof(ec);  // fine for a body that ends with the connection, partial_message otherwise
      } else if (rec == asio::error::operation_aborted && conn_->read_deadline.expired()) {
        ec = beast::error::timeout;
      }
      if (!ec) {
        ec = put_buffered(*conn_->parser, conn_->buffer);
      }
    }
    std::size_t got = conn_->body_buf.size() - parser.get().body().size;
    if (ec) {
      boost::system::error_code out = ec;
      if (ec == beast::error::timeout) {
        out = make_error_code(ClientErrc::idle_timeout);
      } else if (ec == asio::error::operation_aborted) {
        // Cancelled or recalled by our caller: close below, never reuse.
        out = scope.recalled() ? make_error_code(ClientErrc::recalled) : ec;
      } else if (is_parse_error(ec)) {
        out = make_error_code(ClientErrc::bad_response);
      } else {
        out = make_error_code(ClientErrc::closed_mid_body);
      }
      abort();
      co_return out;
    }
    if (parser.is_done()) {
      if (got == 0) {
        done_ = true;
        release();
        co_return BodyPiece{{}, true};
      }
      conn_->pending_done = true;
    }
    if (got > 0) {
      co_return BodyPiece{std::string_view(conn_->body_buf.data(), got), false, conn_->pending_done};
    }
  }
}

asio::awaitable<Result<std::string>> UpstreamResponse::read_all(std::size_t limit) {
  std::string out;
  while (true) {
    auto piece = co_await next();
    if (!piece) {
      co_return piece.error();
    }
    if (piece->done) {
      co_return out;
    }
    if (out.size() + piece->data.size() > limit) {
      abort();
      co_return make_error_code(ClientErrc::body_too_large);
    }
    out.append(piece->data);
  }
}

// --- ClientPool --------------------------------------------------------------------------------------

ClientPool::ClientPool(asio::any_io_executor ex, PoolOptions opts)
    : state_(std::make_shared<detail::PoolState>(std::move(ex), opts)) {}

ClientPool::~ClientPool() {
  close_idle();
}

void ClientPool::set_tls(std::shared_ptr<TlsContext> ctx) {
  state_->opts.tls = std::move(ctx);
}

std::size_t ClientPool::idle_connections() const noexcept {
  std::size_t n = 0;
  for (const auto& [k, q] : state_->idle) {
    n += q.size();
  }
  return n;
}

void ClientPool::close_idle() noexcept {
  for (auto& [k, q] : state_->idle) {
    for (auto& c : q) {
      c->close();
    }
  }
  state_->idle.clear();
}

const PoolStats& ClientPool::stats() const noexcept {
  return state_->stats;
}

asio::awaitable<Result<UpstreamResponse>> ClientPool::send(const Endpoint& ep, Request req,
                                                           ClientTimeouts t) {
  if (req.find(http::field::host) == req.end()) {
    req.set(http::field::host, ep.key());
  }
  if (req.chunked()) {
    req.chunked(false);  // the whole body is at hand: send it with a Content-Length
  }
  if (req.find(http::field::content_length) == req.end() &&
      (!req.body().empty() || req.method() == http::verb::post || req.method() == http::verb::put)) {
    req.prepare_payload();
  }
  RawRequest raw{serialize_head(req), {req.body()}, req.method() == http::verb::head};
  auto r = co_await send_impl(ep, raw, t);  // named: see the GCC 12 note in net/http.hpp
  co_return r;
}

asio::awaitable<Result<UpstreamResponse>> ClientPool::send_impl(const Endpoint& ep, const RawRequest& req,
                                                                ClientTimeouts t, Recall* recall) {
  auto& pool = *state_;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<detail::Connection> conn = attempt == 0 ? pool.take(ep) : nullptr;
    bool fresh = !conn;
    if (fresh) {
      auto c = co_await connect(pool, ep, t);
      if (!c) {
        co_return c.error();
      }
      conn = std::move(*c);
    } else {
      ++pool.stats.reuses;
    }
    const detail::RecallScope scope(recall, conn->stream.socket());
    if (scope.recalled()) {
      conn->close();
      co_return make_error_code(ClientErrc::recalled);
    }
    const std::vector<asio::const_buffer> parts = request_buffers(req);
    std::size_t written = 0;
    boost::system::error_code wec;
    if (!write_now(conn->stream, parts, written, wec)) {
      wec = co_await write_rest(conn->stream, parts, written, t.write);
    }
    if (wec) {
      conn->close();
      if (wec == asio::error::operation_aborted) {
        co_return scope.recalled() ? make_error_code(ClientErrc::recalled) : wec;
      }
      if (!fresh) {
        ++pool.stats.stale_retries;
        continue;
      }
      co_return make_error_code(wec == beast::error::timeout ? ClientErrc::write_timeout
                                                             : ClientErrc::closed_before_response);
    }
    conn->expect_response(pool.opts.max_header_bytes, req.head_method, t.first_byte);
    const detail::HeaderRead header = co_await conn->read_header(pool.opts.max_header_bytes, req.head_method);
    const boost::system::error_code hec = header.ec;
    if (hec) {
      bool nothing_received = header.received == 0;
      conn->close();
      if (hec == asio::error::operation_aborted) {
        co_return scope.recalled() ? make_error_code(ClientErrc::recalled) : hec;
      }
      if (!fresh && nothing_received && hec != beast::error::timeout) {
        ++pool.stats.stale_retries;
        continue;
      }
      if (hec == beast::error::timeout) {
        co_return make_error_code(ClientErrc::first_byte_timeout);
      }
      co_return make_error_code(is_parse_error(hec) ? ClientErrc::bad_response
                                                    : ClientErrc::closed_before_response);
    }
    co_return UpstreamResponse(std::move(conn), state_, fresh, t);
  }
  co_return make_error_code(ClientErrc::closed_before_response);
}

}  // namespace warden::net
