#include "net/tls.hpp"

#include "net/read_deadline.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace warden::net {

namespace {

namespace ssl = asio::ssl;
using namespace asio::experimental::awaitable_operators;
using TlsStream = ssl::stream<tcp::socket>;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// One TLS record's worth of plaintext per read: an SSE event or a request header in one piece.
constexpr std::size_t kRelayBytes = 16u << 10;
// How long a relay whose plain side ended waits for the peer's close_notify after sending its own.
constexpr std::chrono::milliseconds kShutdownWait{1000};
// The longest a relay whose plain side stopped sending keeps relaying what the peer sends (the plain side's
// own lingering close is shorter: net::ServerOptions::linger_timeout).
constexpr std::chrono::milliseconds kLingerLimit{30000};

base::Result<void> readable(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) {
    return base::Failure{fmt::format("cannot read the {} {}: {}", what, path, std::strerror(errno))};
  }
  return {};
}

base::Failure failure(std::string text, const boost::system::error_code& ec) {
  return base::Failure{std::move(text) + ": " + ec.message()};
}

// The certificate chain and its key into `ctx`, checked to belong together.
base::Result<void> load_pair(ssl::context& ctx, const std::string& cert, const std::string& key) {
  if (auto r = readable(cert, "certificate"); !r) {
    return r;
  }
  if (auto r = readable(key, "key"); !r) {
    return r;
  }
  boost::system::error_code ec;
  ctx.use_certificate_chain_file(cert, ec);
  if (ec) {
    return failure(cert + " is not a PEM certificate", ec);
  }
  ctx.use_private_key_file(key, ssl::context::pem, ec);
  const bool mismatch = ec && ec.category() == asio::error::get_ssl_category() &&
                        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH;
  if (ec && !mismatch) {
    return failure(key + " is not a PEM private key", ec);
  }
  if (mismatch || SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
    return base::Failure{fmt::format("the key {} does not match the certificate {}", key, cert)};
  }
  return {};
}

// TLS 1.2 and 1.3 only, as current servers and clients offer.
void modern_only(ssl::context& ctx) {
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                  ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
}

// A connected pair of local stream sockets, both as tcp::socket (the plain code needs only reads, writes,
// peeks, shutdown and close, which a local socket has as well).
Result<std::pair<tcp::socket, tcp::socket>> socket_pair(const asio::any_io_executor& ex) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return boost::system::error_code(errno, boost::system::system_category());
  }
  tcp::socket a(ex);
  tcp::socket b(ex);
  boost::system::error_code ec;
  a.assign(tcp::v4(), fds[0], ec);
  if (ec) {
    ::close(fds[0]);
    ::close(fds[1]);
    return ec;
  }
  b.assign(tcp::v4(), fds[1], ec);
  if (ec) {
    ::close(fds[1]);
    return ec;
  }
  return std::pair{std::move(a), std::move(b)};
}

// The state of one relay, shared by its two pumps.
struct Relay {
  Relay(tcp::socket s, ssl::context& ctx, tcp::socket p) : tls(std::move(s), ctx), plain(std::move(p)) {}
  TlsStream tls;
  tcp::socket plain;
  ReadDeadline tls_deadline{tls.next_layer()};  // handshake, writes and the closing exchange
  bool plain_ended = false;                     // the plain side closed first: say so to the TLS peer
};

// TLS peer → plain side. Ends when the peer closes or fails; a blocked plain write is the plain side's
// business (its own timeouts close it, which fails the write).
asio::awaitable<void> pump_in(Relay& r) {
  std::array<char, kRelayBytes> buf;
  while (true) {
    auto [ec, n] = co_await r.tls.async_read_some(asio::buffer(buf), use_tuple);
    if (ec) {
      co_return;
    }
    auto [wec, wn] = co_await asio::async_write(r.plain, asio::buffer(buf.data(), n), use_tuple);
    if (wec) {
      co_return;
    }
  }
}

// Plain side → TLS peer, each write bounded by `write_timeout` (a peer that stops reading).
asio::awaitable<void> pump_out(Relay& r, std::chrono::milliseconds write_timeout) {
  std::array<char, kRelayBytes> buf;
  while (true) {
    auto [ec, n] = co_await r.plain.async_read_some(asio::buffer(buf), use_tuple);
    if (ec) {
      r.plain_ended = ec == asio::error::eof;
      co_return;
    }
    r.tls_deadline.expires_after(write_timeout);
    auto [wec, wn] = co_await asio::async_write(r.tls, asio::buffer(buf.data(), n), use_tuple);
    r.tls_deadline.clear();
    if (wec) {
      co_return;
    }
  }
}

// Plain side → TLS peer until the plain side ends; then, if it only stopped sending (a refusal before the
// body was read: net::Server shuts its sending side and reads what still comes, a lingering close), waits
// until it is gone altogether, so that what the peer still sends keeps flowing to it through pump_in
// instead of piling up unread, which closing would answer with a reset before the peer read the refusal.
// A plain side that closed altogether is seen at once (its end of the socket pair hangs up).
asio::awaitable<void> pump_out_then_linger(Relay& r, std::chrono::milliseconds write_timeout) {
  co_await pump_out(r, write_timeout);
  if (!r.plain_ended) {
    co_return;
  }
  asio::steady_timer bound(r.plain.get_executor(), kLingerLimit);
  co_await (r.plain.async_wait(tcp::socket::wait_error, use_tuple) || bound.async_wait(use_tuple));
}

// Runs until either side ends, then closes both: a TLS peer that leaves is seen by the plain side as its
// client leaving (EOF), and a plain side that closes sends close_notify first.
asio::awaitable<void> run_relay(std::shared_ptr<Relay> r, std::shared_ptr<ssl::context> ctx,
                                std::chrono::milliseconds write_timeout) {
  co_await (pump_in(*r) || pump_out_then_linger(*r, write_timeout));
  boost::system::error_code ignored;
  if (r->plain_ended) {
    r->tls_deadline.expires_after(kShutdownWait);
    co_await r->tls.async_shutdown(use_tuple);
  }
  r->tls_deadline.disarm();
  r->plain.close(ignored);
  r->tls.next_layer().shutdown(tcp::socket::shutdown_both, ignored);
  r->tls.next_layer().close(ignored);
  (void)ctx;  // held until the end: a reload replaces the listener's context, not this connection's
}

// A relay around `socket` and the plain end its owner gets once the handshake is done.
struct NewRelay {
  std::shared_ptr<Relay> relay;
  tcp::socket mine;
};
Result<NewRelay> new_relay(tcp::socket socket, ssl::context& ctx) {
  auto pair = socket_pair(socket.get_executor());
  if (!pair) {
    return pair.error();
  }
  return NewRelay{std::make_shared<Relay>(std::move(socket), ctx, std::move(pair->first)),
                  std::move(pair->second)};
}

// The handshake in `type` under a deadline, then the relay, detached. Returns the plain end.
asio::awaitable<Result<tcp::socket>> start_relay(std::shared_ptr<Relay> r, std::shared_ptr<ssl::context> ctx,
                                                 TlsStream::handshake_type type,
                                                 std::chrono::milliseconds handshake_timeout,
                                                 std::chrono::milliseconds write_timeout, tcp::socket mine) {
  r->tls_deadline.expires_after(handshake_timeout);
  auto [ec] = co_await r->tls.async_handshake(type, use_tuple);
  const bool timed_out = r->tls_deadline.expired();
  r->tls_deadline.disarm();
  boost::system::error_code ignored;
  if (ec) {
    r->tls.next_layer().close(ignored);
    co_return timed_out ? boost::system::error_code(asio::error::timed_out) : ec;
  }
  const auto ex = mine.get_executor();
  asio::co_spawn(ex, run_relay(r, std::move(ctx), write_timeout), asio::detached);
  co_return std::move(mine);
}

}  // namespace

base::Result<std::shared_ptr<TlsContext>> make_server_tls(const ServerTlsFiles& files) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  modern_only(*ctx);
  if (auto loaded = load_pair(*ctx, files.cert_file, files.key_file); !loaded) {
    return base::Failure{loaded.error()};
  }
  return std::shared_ptr<TlsContext>(std::move(ctx));
}

base::Result<std::shared_ptr<TlsContext>> make_client_tls(const ClientTlsFiles& files) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  modern_only(*ctx);
  ctx->set_verify_mode(ssl::verify_peer);
  boost::system::error_code ec;
  if (files.ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) {
      return failure("cannot load the system's CA store", ec);
    }
  } else {
    if (auto r = readable(files.ca_file, "CA file"); !r) {
      return base::Failure{r.error()};
    }
    ctx->load_verify_file(files.ca_file, ec);
    if (ec) {
      return failure(files.ca_file + " is not a PEM CA bundle", ec);
    }
  }
  if (files.cert_file.empty() != files.key_file.empty()) {
    return base::Failure{"a client certificate needs both cert_file and key_file"};
  }
  if (!files.cert_file.empty()) {
    if (auto loaded = load_pair(*ctx, files.cert_file, files.key_file); !loaded) {
      return base::Failure{loaded.error()};
    }
  }
  return std::shared_ptr<TlsContext>(std::move(ctx));
}

asio::awaitable<Result<tcp::socket>> accept_tls(tcp::socket socket, std::shared_ptr<TlsContext> ctx,
                                                std::chrono::milliseconds handshake_timeout,
                                                std::chrono::milliseconds write_timeout) {
  auto fresh = new_relay(std::move(socket), *ctx);
  if (!fresh) {
    co_return fresh.error();
  }
  auto r = co_await start_relay(std::move(fresh->relay), std::move(ctx), ssl::stream_base::server,
                                handshake_timeout, write_timeout, std::move(fresh->mine));
  co_return r;
}

asio::awaitable<Result<tcp::socket>> connect_tls(tcp::socket socket, std::shared_ptr<TlsContext> ctx,
                                                 const std::string& host,
                                                 std::chrono::milliseconds handshake_timeout,
                                                 std::chrono::milliseconds write_timeout) {
  auto fresh = new_relay(std::move(socket), *ctx);
  if (!fresh) {
    co_return fresh.error();
  }
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  const bool is_address = !ec;
  // SNI names a host, never an address (RFC 6066, 3).
  if (!is_address && SSL_set_tlsext_host_name(fresh->relay->tls.native_handle(), host.c_str()) != 1) {
    co_return asio::error::invalid_argument;
  }
  fresh->relay->tls.set_verify_callback(ssl::host_name_verification(host));
  auto r = co_await start_relay(std::move(fresh->relay), std::move(ctx), ssl::stream_base::client,
                                handshake_timeout, write_timeout, std::move(fresh->mine));
  co_return r;
}

}  // namespace warden::net
