// net::Server and net::ClientPool / SyncClient over loopback: keep-alive, chunked streaming, body limit,
// timeouts, client disconnect → handler cancellation (directly and through a proxy), shutdown.

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "net/client.hpp"
#include "net/read_deadline.hpp"
#include "net/server.hpp"
#include "net/sync_client.hpp"
#include "support/child_process.hpp"
#include "support/http.hpp"
#include "support/wait.hpp"
#include "test_server.hpp"

using namespace std::chrono_literals;
using namespace warden;
using net::asio::awaitable;
using net_test::TestServer;

namespace {

awaitable<void> sleep_for(std::chrono::milliseconds d) {
  net::asio::steady_timer t(co_await net::asio::this_coro::executor, d);
  co_await t.async_wait(net::asio::use_awaitable);
}

net::Handler echo_handler() {
  return [](net::Request& req, const net::ConnectionInfo& c) -> awaitable<net::Reply> {
    co_return net::make_response(
        req, 200, std::string(req.target()) + " conn=" + std::to_string(c.id) + " body=" + req.body(),
        "text/plain");
  };
}

}  // namespace

TEST(NetServer, KeepAliveReusesOneConnection) {
  TestServer s(echo_handler());
  test_support::Client c(s.port());
  auto a = c.get("/a");
  auto b = c.post("/b", "xyz");
  EXPECT_EQ(a.status, 200u);
  EXPECT_EQ(a.body, "/a conn=1 body=");
  EXPECT_EQ(b.body, "/b conn=1 body=xyz");
  EXPECT_EQ(c.raw().reused_requests(), 1u);
  EXPECT_EQ(s.stats().connections_accepted, 1u);
}

TEST(NetServer, ConnectionCloseIsHonoured) {
  TestServer s(echo_handler());
  std::string out =
      test_support::raw_exchange(s.port(), "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 5000ms);
  EXPECT_EQ(test_support::raw_status(out), 200);
  EXPECT_NE(out.find("/x conn=1"), std::string::npos);  // raw_exchange returned: the server closed
}

TEST(NetServer, PipelinedRequestsAreAnsweredInOrder) {
  TestServer s(echo_handler());
  std::string out = test_support::raw_exchange(
      s.port(),
      "GET /one HTTP/1.1\r\nHost: a\r\n\r\nGET /two HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
      5000ms);
  auto one = out.find("/one conn=1");
  auto two = out.find("/two conn=1");
  ASSERT_NE(one, std::string::npos) << out;
  ASSERT_NE(two, std::string::npos) << out;
  EXPECT_LT(one, two);
}

TEST(NetServer, StreamSendsEachChunkAsItIsWritten) {
  std::atomic<bool> client_saw_first{false};
  std::atomic<bool> server_waited_ok{false};
  TestServer s([&](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    net::StreamReply r = net::sse_reply(req);
    r.body = [&](net::StreamWriter& w) -> awaitable<void> {
      co_await w.write("data: first\n\n");
      // If the session buffered chunks, the client would never see the first one and this would time out.
      // Blocking the server's thread here is harmless: the first chunk is already with the kernel.
      server_waited_ok = test_support::wait_until([&] { return client_saw_first.load(); }, 10s);
      co_await w.write("data: second\n\n");
    };
    co_return r;
  });
  test_support::Client c(s.port());
  auto res = c.post("/s", "{}", {}, [&](std::string_view piece) {
    if (piece.find("first") != std::string_view::npos) {
      client_saw_first = true;
    }
    return true;
  });
  EXPECT_TRUE(server_waited_ok);
  EXPECT_EQ(res.status, 200u);
  EXPECT_EQ(res.header("Transfer-Encoding"), "chunked");
  EXPECT_EQ(res.header("Content-Type"), "text/event-stream; charset=utf-8");
  auto events = test_support::parse_sse(res.body);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].data, "first");
  EXPECT_EQ(events[1].data, "second");
  // The connection survives a completed stream.
  auto again = c.post("/s2", "{}");
  EXPECT_EQ(again.status, 200u);
  EXPECT_EQ(c.raw().reused_requests(), 1u);
}

TEST(NetServer, HeaderWithFirstChunkAndWriteLastFrameAValidResponse) {
  std::atomic<bool> write_after_last_failed{false};
  TestServer s([&](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    net::StreamReply r = net::sse_reply(req);
    r.header_with_first_chunk = true;
    if (req.target() == "/empty") {
      co_return r;  // no body at all: header and terminating chunk go out together
    }
    r.body = [&](net::StreamWriter& w) -> awaitable<void> {
      EXPECT_FALSE(co_await w.write("data: a\n\n"));
      EXPECT_FALSE(co_await w.write_last("data: b\n\n"));
      write_after_last_failed = static_cast<bool>(co_await w.write("data: c\n\n"));
    };
    co_return r;
  });
  // The exact bytes: one header, two chunks, one terminating chunk, and the connection closed as asked.
  std::string out = test_support::raw_exchange(
      s.port(), "POST /s HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", 5000ms);
  EXPECT_EQ(test_support::raw_status(out), 200) << out;
  const auto body_at = out.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos);
  EXPECT_EQ(out.substr(body_at + 4), "9\r\ndata: a\n\n\r\n9\r\ndata: b\n\n\r\n0\r\n\r\n");
  EXPECT_TRUE(write_after_last_failed);
  // Keep-alive survives both forms, and the empty body is a valid (empty) chunked body.
  test_support::Client c(s.port());
  auto full = c.post("/s", "{}");
  auto empty = c.post("/empty", "{}");
  auto again = c.post("/s", "{}");
  EXPECT_EQ(full.status, 200u);
  EXPECT_EQ(test_support::parse_sse(full.body).size(), 2u);
  EXPECT_EQ(empty.status, 200u);
  EXPECT_EQ(empty.body, "");
  EXPECT_EQ(again.body, full.body);
  EXPECT_EQ(c.raw().reused_requests(), 2u);
}

TEST(NetServer, HeaderPreparedByTheHandlerIsSentAsPrepared) {
  // A relay prepares its header before its first chunk: Content-Length dropped, chunked set once, the
  // keep-alive decision (the client's wish and the header's own) carried to the session.
  TestServer s([&](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    net::StreamReply r = net::sse_reply(req);
    r.header.set(net::http::field::content_length, "99");
    r.header.set("x-prepared", "yes");
    if (req.target() == "/close") {
      r.header.set(net::http::field::connection, "close");
    }
    r.header_with_first_chunk = true;
    net::prepare_header(r, req.keep_alive());
    r.header.set("x-too-late", "ignored");  // the prepared text is what goes out
    r.body = [](net::StreamWriter& w) -> awaitable<void> { co_await w.write_last("data: a\n\n"); };
    co_return r;
  });
  std::string out = test_support::raw_exchange(
      s.port(), "POST /s HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", 5000ms);
  EXPECT_EQ(test_support::raw_status(out), 200) << out;
  const std::string head = out.substr(0, out.find("\r\n\r\n"));
  EXPECT_NE(head.find("x-prepared: yes"), std::string::npos) << head;
  EXPECT_EQ(head.find("x-too-late"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
  EXPECT_NE(head.find("Transfer-Encoding: chunked"), std::string::npos) << head;
  EXPECT_EQ(out.substr(out.find("\r\n\r\n") + 4), "9\r\ndata: a\n\n\r\n0\r\n\r\n");
  // Keep-alive as the client asked; a prepared "Connection: close" ends the connection after the body.
  test_support::Client c(s.port());
  EXPECT_EQ(c.post("/s", "{}").status, 200u);
  EXPECT_EQ(c.post("/s", "{}").status, 200u);
  EXPECT_EQ(c.raw().reused_requests(), 1u);
  std::string closed = test_support::raw_exchange(
      s.port(), "POST /close HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}", 5000ms);
  EXPECT_NE(closed.find("Connection: close"), std::string::npos) << closed;  // returned: the server closed
}

TEST(NetServer, WritesLargerThanTheSocketBufferArriveWhole) {
  // 8 MB does not fit a loopback socket's send buffer: the eager write takes what fits and the rest goes
  // out asynchronously, for a streamed chunk and for a whole response alike.
  std::string big(8u << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 4093) {
    big[i] = static_cast<char>('a' + i % 26);
  }
  TestServer s([&](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    if (req.target() == "/whole") {
      co_return net::make_response(req, 200, big, "text/plain");
    }
    net::StreamReply r = net::sse_reply(req);
    r.body = [&](net::StreamWriter& w) -> awaitable<void> {
      EXPECT_FALSE(co_await w.write(big));
      EXPECT_FALSE(co_await w.write_last(big));
    };
    co_return r;
  });
  test_support::Client c(s.port());
  auto whole = c.get("/whole");
  EXPECT_EQ(whole.status, 200u);
  EXPECT_TRUE(whole.body == big) << whole.body.size();
  auto streamed = c.post("/stream", "{}");
  EXPECT_EQ(streamed.status, 200u);
  EXPECT_TRUE(streamed.body == big + big) << streamed.body.size();
  EXPECT_EQ(c.raw().reused_requests(), 1u);
}

TEST(NetServer, LargeAndPipelinedBodiesArriveWhole) {
  TestServer s(echo_handler());
  // A 300 KB body (an agent's history) in one request.
  std::string big(300'000, 'x');
  for (std::size_t i = 0; i < big.size(); i += 997) {
    big[i] = static_cast<char>('a' + i % 26);
  }
  test_support::Client c(s.port());
  auto r = c.post("/big", big);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, "/big conn=1 body=" + big);
  // Two requests with bodies in one write: the first body and the second request share the read buffer.
  std::string out = test_support::raw_exchange(s.port(),
                                               "POST /one HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
                                               "POST /two HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n"
                                               "Connection: close\r\n\r\ndefg",
                                               5000ms);
  auto one = out.find("/one conn=2 body=abc");
  auto two = out.find("/two conn=2 body=defg");
  ASSERT_NE(one, std::string::npos) << out;
  ASSERT_NE(two, std::string::npos) << out;
  EXPECT_LT(one, two);
}

TEST(NetServer, BodyOverLimitGets413) {
  net::ServerOptions opts;
  opts.max_body_bytes = 1000;
  TestServer s(echo_handler(), opts);
  test_support::Client c(s.port());
  EXPECT_EQ(c.post("/ok", std::string(1000, 'a')).status, 200u);
  auto big = c.raw().post("/big", std::string(1001, 'a'));
  ASSERT_TRUE(big.has_value()) << big.error().message();
  EXPECT_EQ(big->status, 413u);
  EXPECT_NE(big->body.find("\"error\""), std::string::npos);
  // Chunked upload without Content-Length: the limit is enforced while reading.
  std::string chunked = "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) {
    chunked += "1f4\r\n" + std::string(500, 'b') + "\r\n";
  }
  chunked += "0\r\n\r\n";
  EXPECT_EQ(test_support::raw_status(test_support::raw_exchange(s.port(), chunked, 5000ms)), 413);
}

TEST(NetServer, MalformedRequestGets400AndHugeHeaderGets431) {
  net::ServerOptions opts;
  opts.max_header_bytes = 2048;
  TestServer s(echo_handler(), opts);
  EXPECT_EQ(test_support::raw_status(test_support::raw_exchange(s.port(), "HELLO\r\n\r\n", 5000ms)), 400);
  EXPECT_EQ(test_support::raw_status(
                test_support::raw_exchange(s.port(), "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 5000ms)),
            400);
  std::string huge = "GET / HTTP/1.1\r\nX-Big: " + std::string(4096, 'h') + "\r\n\r\n";
  EXPECT_EQ(test_support::raw_status(test_support::raw_exchange(s.port(), huge, 5000ms)), 431);
  // Still serving.
  test_support::Client c(s.port());
  EXPECT_EQ(c.get("/").status, 200u);
}

TEST(NetServer, ReadTimeoutClosesASlowClient) {
  net::ServerOptions opts;
  opts.read_timeout = 200ms;
  TestServer s(echo_handler(), opts);
  auto start = std::chrono::steady_clock::now();
  // An incomplete header, then silence: the server must close the connection on its own.
  std::string out = test_support::raw_exchange(s.port(), "GET / HTTP/1.1\r\nHost:", 20000ms);
  EXPECT_TRUE(out.empty()) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);  // closed by the server, not by our timeout
}

// A keep-alive connection waits idle_timeout for its next request, but once that request's first bytes
// are in, the rest of its header has read_timeout, as on a new connection.
TEST(NetServer, ASecondRequestsStalledHeaderHasTheReadTimeoutNotTheIdleOne) {
  net::ServerOptions opts;
  opts.read_timeout = 300ms;
  opts.idle_timeout = 60s;
  TestServer s(echo_handler(), opts);
  const int fd = test_support::raw_connect(s.port());
  const auto send_all = [fd](std::string_view bytes) {
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  };
  // Reads until `needle` arrived or the peer closed (false) or 10 s passed with nothing new.
  std::string got;
  const auto read_until = [&](std::string_view needle) {
    while (needle.empty() || got.find(needle) == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      char buf[4096];
      const ssize_t n = ::poll(&p, 1, 10'000) > 0 ? ::recv(fd, buf, sizeof buf, 0) : -1;
      if (n <= 0) {
        return n == 0;  // 0: closed by the server; -1: our bound passed
      }
      got.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  };
  send_all("GET /first HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_TRUE(read_until("/first conn=1 body=")) << got;
  got.clear();
  const auto start = std::chrono::steady_clock::now();
  send_all("GET /second HTTP/1.1\r\nHo");
  EXPECT_TRUE(read_until("")) << "the server must close the connection";
  const auto waited = std::chrono::steady_clock::now() - start;
  ::close(fd);
  EXPECT_TRUE(got.empty() || test_support::raw_status(got) == 408) << got;
  EXPECT_GE(waited, 250ms);
  EXPECT_LT(waited, 5s) << "closed after the idle timeout, not the read timeout";
}

TEST(NetClient, FirstByteAndIdleTimeoutsFire) {
  TestServer s([](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    if (req.target() == "/slow-header") {
      co_await sleep_for(3s);
      co_return net::make_response(req, 200, "late");
    }
    net::StreamReply r = net::sse_reply(req);
    r.body = [](net::StreamWriter& w) -> awaitable<void> {
      co_await w.write("data: 1\n\n");
      co_await sleep_for(3s);
      co_await w.write("data: 2\n\n");
    };
    co_return r;
  });
  net::ClientTimeouts t;
  t.first_byte = 150ms;
  t.idle = 150ms;
  net::SyncClient c("127.0.0.1", static_cast<std::uint16_t>(s.port()), t);
  auto slow = c.get("/slow-header");
  ASSERT_FALSE(slow.has_value());
  EXPECT_EQ(slow.error(), net::ClientErrc::first_byte_timeout);
  auto stalled = c.get("/stall");
  ASSERT_FALSE(stalled.has_value());
  EXPECT_EQ(stalled.error(), net::ClientErrc::idle_timeout);
}

TEST(NetClient, ReadDeadlineMovesBothWaysAndReleasesTheContext) {
  using namespace std::chrono;
  net::asio::io_context ioc;
  net::tcp::acceptor acceptor(ioc, {net::asio::ip::make_address("127.0.0.1"), 0});
  net::tcp::socket client(ioc);
  net::tcp::socket server(ioc);
  client.connect(acceptor.local_endpoint());
  acceptor.accept(server);  // a peer that never writes: every read below can only end by its deadline
  net::ReadDeadline deadline(client);
  // A deadline that never fires must fail the test, not hang it.
  net::asio::steady_timer guard(ioc, seconds(20));
  guard.async_wait([&](boost::system::error_code ec) {
    if (!ec) {
      client.cancel();
    }
  });
  char byte = 0;
  auto timed_read = [&] {
    boost::system::error_code got;
    const auto start = steady_clock::now();
    client.async_read_some(net::asio::buffer(&byte, 1),
                           [&](boost::system::error_code ec, std::size_t) { got = ec; });
    ioc.restart();
    while (!got && ioc.run_one() > 0) {
    }
    return std::pair{got, steady_clock::now() - start};
  };
  // A long deadline moved earlier: the earlier one counts.
  deadline.expires_after(hours(1));
  deadline.expires_after(milliseconds(60));
  auto [ec1, took1] = timed_read();
  EXPECT_EQ(ec1, net::asio::error::operation_aborted);
  EXPECT_TRUE(deadline.expired());
  EXPECT_GE(took1, milliseconds(60));
  EXPECT_LT(took1, seconds(30));
  // Moved later while the timer waits: it does not fire at the old time.
  deadline.expires_after(milliseconds(40));
  const auto start = steady_clock::now();
  net::asio::steady_timer later(ioc, milliseconds(20));
  later.async_wait([&](boost::system::error_code) { deadline.expires_after(milliseconds(120)); });
  const auto ec2 = timed_read().first;
  EXPECT_EQ(ec2, net::asio::error::operation_aborted);
  EXPECT_GE(steady_clock::now() - start, milliseconds(140));
  // Disarmed: nothing is left waiting, so run() returns at once.
  guard.cancel();
  deadline.expires_after(hours(1));
  deadline.disarm();
  EXPECT_FALSE(deadline.expired());
  ioc.restart();
  const auto before_run = steady_clock::now();
  ioc.run();
  EXPECT_LT(steady_clock::now() - before_run, seconds(10));
}

TEST(NetClient, ConnectRefusedIsAnError) {
  int port = 0;
  {
    net::asio::io_context ioc;
    net::tcp::acceptor a(ioc, {net::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }  // closed: nothing listens there now
  net::SyncClient c("127.0.0.1", static_cast<std::uint16_t>(port));
  auto r = c.get("/");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), net::ClientErrc::connect_failed);
}

TEST(NetClient, ParsesUpstreamUrls) {
  auto a = net::parse_http_url("http://127.0.0.1:8000/v1");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8000);
  EXPECT_EQ(a->key(), "127.0.0.1:8000");
  auto b = net::parse_http_url("http://localhost");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->port, 80);
  auto c = net::parse_http_url("https://x");
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->tls);
  EXPECT_EQ(c->port, 443);
  EXPECT_FALSE(a->tls);
  EXPECT_FALSE(net::parse_http_url("ftp://x:1").has_value());
  EXPECT_FALSE(net::parse_http_url("not a url").has_value());
  EXPECT_FALSE(net::parse_http_url("http://:8000").has_value());
}

TEST(NetServer, ClientDisconnectCancelsAStreamingHandler) {
  std::atomic<bool> cancelled{false};
  std::atomic<int> chunks{0};
  TestServer s([&](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    net::StreamReply r = net::sse_reply(req);
    r.body = [&](net::StreamWriter& w) -> awaitable<void> {
      try {
        for (int i = 0; i < 100000; ++i) {
          if (co_await w.write("data: tick\n\n")) {
            co_return;
          }
          ++chunks;
          co_await sleep_for(5ms);
        }
      } catch (const boost::system::system_error& e) {
        cancelled = e.code() == net::asio::error::operation_aborted;
        throw;
      }
    };
    co_return r;
  });
  test_support::Client c(s.port());
  int seen = 0;
  auto res = c.post("/s", "{}", {}, [&](std::string_view) { return ++seen < 3; });
  EXPECT_TRUE(res.hung_up);
  EXPECT_TRUE(test_support::wait_until([&] { return cancelled.load(); }, 10s));
  int at_cancel = chunks;
  EXPECT_LT(at_cancel, 1000);
  EXPECT_TRUE(test_support::wait_until([&] { return s.stats().client_disconnects == 1; }, 10s));
}

TEST(NetServer, ClientDisconnectCancelsAHandlerBeforeItsResponse) {
  std::atomic<bool> started{false};
  std::atomic<bool> cancelled{false};
  TestServer s([&](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    started = true;
    try {
      co_await sleep_for(60s);
    } catch (const boost::system::system_error&) {
      cancelled = true;
      throw;
    }
    co_return net::make_response(req, 200, "never");
  });
  // Sends a request, hangs up once the handler runs, and the handler must see its cancellation.
  const int fd = test_support::raw_connect(s.port());
  const std::string_view request = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  const bool handler_ran = test_support::wait_until([&] { return started.load(); }, 10s);
  ::close(fd);
  ASSERT_TRUE(handler_ran);
  EXPECT_TRUE(test_support::wait_until([&] { return cancelled.load(); }, 10s));
}

TEST(NetProxy, DownstreamDisconnectClosesTheUpstreamStream) {
  // upstream: streams forever until cancelled; proxy: relays with ClientPool; client hangs up at the proxy.
  std::atomic<bool> upstream_cancelled{false};
  TestServer upstream([&](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    net::StreamReply r = net::sse_reply(req);
    r.body = [&](net::StreamWriter& w) -> awaitable<void> {
      try {
        while (true) {
          if (co_await w.write("data: up\n\n")) {
            upstream_cancelled = true;  // write failed: the proxy closed the connection
            co_return;
          }
          co_await sleep_for(5ms);
        }
      } catch (const boost::system::system_error&) {
        upstream_cancelled = true;
        throw;
      }
    };
    co_return r;
  });
  std::unique_ptr<net::ClientPool> pool;
  int up_port = upstream.port();
  std::unique_ptr<TestServer> proxy;
  proxy = std::make_unique<TestServer>([&](net::Request& req,
                                           const net::ConnectionInfo&) -> awaitable<net::Reply> {
    if (!pool) {
      pool = std::make_unique<net::ClientPool>(co_await net::asio::this_coro::executor);
    }
    net::Request up{req.method(), req.target(), 11};
    up.body() = req.body();
    net::Endpoint ep{"127.0.0.1", static_cast<std::uint16_t>(up_port)};  // named: see net/http.hpp on GCC 12
    auto r = co_await pool->send(ep, std::move(up));
    if (!r) {
      co_return net::make_response(req, 502, r.error().message());
    }
    auto relay = std::make_shared<net::UpstreamResponse>(std::move(*r));
    net::StreamReply s = net::sse_reply(req, relay->status());
    s.body = [relay](net::StreamWriter& w) -> awaitable<void> {
      while (true) {
        auto piece = co_await relay->next();
        if (!piece || piece->done) {
          co_return;
        }
        if (co_await w.write(piece->data)) {
          co_return;
        }
      }
    };
    co_return s;
  });
  test_support::Client c(proxy->port());
  int seen = 0;
  auto res = c.post("/relay", "{}", {}, [&](std::string_view) { return ++seen < 4; });
  EXPECT_TRUE(res.hung_up);
  EXPECT_NE(res.body.find("data: up"), std::string::npos);
  EXPECT_TRUE(test_support::wait_until([&] { return upstream_cancelled.load(); }, 10s));
  proxy.reset();  // pool is touched only on the proxy's thread; destroy it after that thread is gone
  pool.reset();
}

TEST(NetProxy, PooledConnectionsAreReusedAndStaleOnesRetried) {
  TestServer upstream(echo_handler());
  net::asio::io_context ioc;
  net::ClientPool pool(ioc.get_executor());
  net::Endpoint ep{"127.0.0.1", static_cast<std::uint16_t>(upstream.port())};
  std::vector<std::string> bodies;
  auto run = [&]() -> awaitable<void> {
    for (int i = 0; i < 3; ++i) {
      net::Request req{net::http::verb::get, "/p" + std::to_string(i), 11};
      auto r = co_await pool.send(ep, std::move(req));
      EXPECT_TRUE(r.has_value());
      if (r) {
        auto body = co_await r->read_all();
        bodies.push_back(body ? *body : "error");
      }
    }
  };
  net::asio::co_spawn(ioc, run(), net::asio::detached);
  ioc.run();
  ASSERT_EQ(bodies.size(), 3u);
  EXPECT_EQ(bodies[2], "/p2 conn=1 body=");
  EXPECT_EQ(pool.stats().connects, 1u);
  EXPECT_EQ(pool.stats().reuses, 2u);
  EXPECT_EQ(pool.idle_connections(), 1u);
}

TEST(NetServer, StopCancelsInFlightStreamsAndEndsTheAcceptLoop) {
  std::atomic<bool> streaming{false};
  std::atomic<bool> cancelled{false};
  auto s = std::make_unique<TestServer>(
      [&](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
        net::StreamReply r = net::sse_reply(req);
        r.body = [&](net::StreamWriter& w) -> awaitable<void> {
          streaming = true;
          try {
            while (!(co_await w.write("data: x\n\n"))) {
              co_await sleep_for(5ms);
            }
          } catch (const boost::system::system_error&) {
          }
          cancelled = true;
        };
        co_return r;
      });
  std::thread client([port = s->port()] {
    net::SyncClient c("127.0.0.1", static_cast<std::uint16_t>(port));
    (void)c.post("/s", "{}");  // ends when the server goes away
  });
  ASSERT_TRUE(test_support::wait_until([&] { return streaming.load(); }, 10s));
  s->stop();
  EXPECT_TRUE(test_support::wait_until([&] { return cancelled.load() && s->run_returned(); }, 10s));
  client.join();
  s.reset();  // joins the io thread: it must run out of work on its own
}

TEST(TestSupport, ChildProcessReportsPortAndStops) {
  test_support::ChildProcess p({"/bin/sh", "-c", "echo 'listening on http://127.0.0.1:4321'; exec sleep 60"});
  EXPECT_EQ(p.wait_for_port(10s), 4321);
  EXPECT_TRUE(p.running());
  int code = p.stop(2s);
  EXPECT_EQ(code, 128 + SIGTERM);
  EXPECT_FALSE(p.running());
}

TEST(TestSupport, ChildProcessThatExitsEarlyFailsFast) {
  test_support::ChildProcess p({"/bin/sh", "-c", "echo oops >&2; exit 3"});
  EXPECT_THROW(p.wait_for_port(10s), std::runtime_error);
  EXPECT_EQ(p.stop(), 3);
}
