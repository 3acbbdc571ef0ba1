// TLS on both sides (net/tls.hpp): a net::Server with a certificate the test makes, reached by a client
// pool that verifies it; a context replaced while a stream is open serves new connections only.

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <string>
#include <thread>

#include "net/sync_client.hpp"
#include "net/tls.hpp"
#include "support/certs.hpp"
#include "support/temp_dir.hpp"
#include "support/wait.hpp"
#include "test_server.hpp"

using namespace std::chrono_literals;
using namespace warden;
using net::asio::awaitable;
using test_support::make_certificate;

namespace {

std::shared_ptr<net::TlsContext> server_tls(const test_support::Certificate& c) {
  auto ctx = net::make_server_tls({c.cert, c.key});
  EXPECT_TRUE(ctx) << ctx.error();
  return ctx ? *ctx : nullptr;
}

std::shared_ptr<net::TlsContext> trusting(const std::string& ca_file) {
  auto ctx = net::make_client_tls({.ca_file = ca_file});
  EXPECT_TRUE(ctx) << ctx.error();
  return ctx ? *ctx : nullptr;
}

net::Endpoint https(const std::string& host, int port) {
  return {host, static_cast<std::uint16_t>(port), true};
}

// Three SSE events, one chunk each.
net::Handler three_events() {
  return [](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    net::StreamReply s = net::sse_reply(req);
    s.body = [](net::StreamWriter& w) -> awaitable<void> {
      for (const char* e : {"data: 1\n\n", "data: 2\n\n", "data: [DONE]\n\n"}) {
        if (co_await w.write(e)) {
          co_return;
        }
      }
    };
    co_return s;
  };
}

// Sends the head and `body_bytes` of body over TLS before reading anything, as a client that writes its whole
// request first (Python's urllib); returns what it read back, and whether every byte went out.
std::string tls_send_all_then_read(int port, const std::string& ca_file, const std::string& head,
                                   std::size_t body_bytes, bool& sent_all) {
  namespace ssl = net::asio::ssl;
  net::asio::io_context ioc;
  ssl::context ctx(ssl::context::tls_client);
  ctx.load_verify_file(ca_file);
  ctx.set_verify_mode(ssl::verify_peer);
  ssl::stream<net::tcp::socket> tls(ioc, ctx);
  tls.next_layer().connect({net::asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(port)});
  tls.handshake(ssl::stream_base::client);
  boost::system::error_code ec;
  net::asio::write(tls, net::asio::buffer(head), ec);
  const std::string chunk(64u << 10, 'x');
  for (std::size_t sent = 0; !ec && sent < body_bytes;) {
    sent +=
        net::asio::write(tls, net::asio::buffer(chunk.data(), std::min(chunk.size(), body_bytes - sent)), ec);
  }
  sent_all = !ec;
  std::string out;
  std::array<char, 4096> buf;
  for (std::size_t n; (n = tls.read_some(net::asio::buffer(buf), ec)) > 0 && !ec;) {
    out.append(buf.data(), n);
  }
  return out;
}

}  // namespace

// A refusal decided before the body was read (413) reaches a TLS client that sends its whole body before
// reading, as it does a plain one (NetServerEdges.AnEarlyRefusalReachesAClientStillSendingItsBody), instead
// of a reset: the relay keeps passing the body on to the server's lingering close.
TEST(NetTls, AnEarlyRefusalReachesAClientStillSendingItsBody) {
  test_support::TempDir dir;
  const auto cert = make_certificate(dir.path, "server");
  net::ServerOptions opts;
  opts.max_body_bytes = 1u << 20;
  net_test::TestServer server(three_events(), opts);
  server.set_tls(server_tls(cert));
  const std::size_t body = std::size_t{32} << 20;  // far more than loopback buffers
  bool sent_all = false;
  const std::string got = tls_send_all_then_read(
      server.port(), cert.cert,
      "POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: " + std::to_string(body) + "\r\n\r\n", body,
      sent_all);
  EXPECT_TRUE(sent_all);
  EXPECT_EQ(got.substr(0, 12), "HTTP/1.1 413") << got.substr(0, 200);
}

// The pool speaks TLS to the server, checks the certificate's name (its DNS and its IP entry), streams a
// body piece by piece and keeps the connection for the next request.
TEST(NetTls, AServerAndAPoolSpeakHttpsWithTheCertificateChecked) {
  test_support::TempDir dir;
  const auto cert = make_certificate(dir.path, "server");
  net_test::TestServer server(three_events());
  server.set_tls(server_tls(cert));
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    net::SyncClient c(https(host, server.port()), trusting(cert.cert));
    for (int i = 0; i < 2; ++i) {
      auto r = c.get("/v1/stream");
      ASSERT_TRUE(r) << host << ": " << r.error().message();
      EXPECT_EQ(r->status, 200u);
      EXPECT_EQ(r->body, "data: 1\n\ndata: 2\n\ndata: [DONE]\n\n");
    }
    EXPECT_EQ(c.reused_requests(), 1u) << host;
  }
}

// A certificate the client does not trust, or one for another name, fails the handshake; a plain HTTP
// client on the TLS port gets a plain-text 400, and the server counts the three as failed handshakes.
TEST(NetTls, AnUntrustedOrMisnamedCertificateIsRefused) {
  test_support::TempDir dir;
  const auto other_name = make_certificate(dir.path, "elsewhere", "DNS:elsewhere.example");
  const auto unrelated = make_certificate(dir.path, "unrelated");
  net_test::TestServer server(three_events());
  server.set_tls(server_tls(other_name));
  net::SyncClient misnamed(https("127.0.0.1", server.port()), trusting(other_name.cert));
  auto r = misnamed.get("/");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), net::ClientErrc::tls_failed);
  net::SyncClient untrusted(https("localhost", server.port()), trusting(unrelated.cert));
  r = untrusted.get("/");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), net::ClientErrc::tls_failed);
  // Plain HTTP on the TLS port gets nginx's plain-text 400 (and counts as a failed handshake).
  net::SyncClient plain("127.0.0.1", static_cast<std::uint16_t>(server.port()), {.first_byte = 5s});
  const auto answer = plain.get("/");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 400u);
  EXPECT_TRUE(test_support::wait_until([&] { return server.stats().tls_handshake_failures == 3; }, 10s))
      << server.stats().tls_handshake_failures;
}

// A renewed certificate: set_tls while a stream is open. New connections get the new certificate (a
// client trusting only the old one is refused), and the open stream runs to its end on the old one.
TEST(NetTls, ANewContextServesNewConnectionsWhileAnOpenStreamGoesOn) {
  test_support::TempDir dir;
  const auto old_cert = make_certificate(dir.path, "old");
  const auto new_cert = make_certificate(dir.path, "new");
  std::unique_ptr<net::asio::steady_timer> gate;  // holds the stream after its first event
  std::atomic<bool> first_seen{false};
  net_test::TestServer server([&](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    net::StreamReply s = net::sse_reply(req);
    s.body = [&](net::StreamWriter& w) -> awaitable<void> {
      co_await w.write("data: before\n\n");
      co_await gate->async_wait(net::asio::as_tuple(net::asio::use_awaitable));
      co_await w.write("data: after\n\n");
    };
    co_return s;
  });
  gate = std::make_unique<net::asio::steady_timer>(server.ioc(), net::asio::steady_timer::time_point::max());
  server.set_tls(server_tls(old_cert));
  std::string streamed;
  std::thread stream([&] {
    net::SyncClient c(https("localhost", server.port()), trusting(old_cert.cert));
    auto r = c.request(net::http::verb::get, "/v1/stream", {}, {}, [&](std::string_view) {
      first_seen = true;
      return true;
    });
    streamed = r ? r->body : r.error().message();
  });
  ASSERT_TRUE(test_support::wait_until([&] { return first_seen.load(); }, 10s));
  server.set_tls(server_tls(new_cert));
  net::SyncClient trusts_old(https("localhost", server.port()), trusting(old_cert.cert));
  auto refused = trusts_old.get("/v1/stream");
  EXPECT_FALSE(refused);
  net::SyncClient trusts_new(https("localhost", server.port()), trusting(new_cert.cert));
  std::atomic<bool> new_first{false};
  std::thread second([&] {
    auto r = trusts_new.request(net::http::verb::get, "/v1/stream", {}, {}, [&](std::string_view) {
      new_first = true;
      return false;  // hang up: this one only had to be served
    });
    EXPECT_TRUE(r && r->status == 200u);
  });
  EXPECT_TRUE(test_support::wait_until([&] { return new_first.load(); }, 10s));
  second.join();
  net::asio::post(server.ioc(), [&] { gate->cancel(); });  // the open stream may end now
  stream.join();
  EXPECT_EQ(streamed, "data: before\n\ndata: after\n\n");
}

// A client that connects and never starts its handshake is closed after the read timeout (the handshake's
// bound), counted as a failed handshake.
TEST(NetTls, AClientThatNeverHandshakesIsClosedAfterTheReadTimeout) {
  test_support::TempDir dir;
  net::ServerOptions opts;
  opts.read_timeout = 200ms;
  net_test::TestServer server(three_events(), opts);
  server.set_tls(server_tls(make_certificate(dir.path, "server")));
  net::asio::io_context ioc;
  net::tcp::socket silent(ioc);
  silent.connect({net::asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(server.port())});
  ASSERT_TRUE(test_support::wait_until([&] { return server.stats().tls_handshake_failures == 1; }, 10s));
  char byte = 0;
  boost::system::error_code ec;
  silent.read_some(net::asio::buffer(&byte, 1), ec);
  EXPECT_EQ(ec, net::asio::error::eof);
}

// A connection still in its TLS handshake counts against max_connections (it holds a socket and a
// coroutine as an open one does): with one silent handshake under way and a bound of one, the next client
// is over the bound (503); once the silent one is gone, a client is served again.
TEST(NetTls, AConnectionInItsHandshakeCountsAgainstMaxConnections) {
  test_support::TempDir dir;
  const auto cert = make_certificate(dir.path, "server");
  net::ServerOptions opts;
  opts.max_connections = 1;
  net_test::TestServer server(three_events(), opts);
  server.set_tls(server_tls(cert));
  net::asio::io_context ioc;
  net::tcp::socket silent(ioc);
  silent.connect({net::asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(server.port())});
  ASSERT_TRUE(test_support::wait_until([&] { return server.stats().connections_accepted == 1; }, 10s));
  {
    net::SyncClient over(https("127.0.0.1", server.port()), trusting(cert.cert));
    auto r = over.get("/v1/stream");
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->status, 503u);
  }
  silent.close();
  ASSERT_TRUE(test_support::wait_until([&] { return server.stats().tls_handshake_failures == 1; }, 10s));
  ASSERT_TRUE(test_support::wait_until([&] { return server.stats().connections_open == 0; }, 10s));
  net::SyncClient served(https("127.0.0.1", server.port()), trusting(cert.cert));
  auto r = served.get("/v1/stream");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->status, 200u);
}
