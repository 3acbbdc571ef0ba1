// The strict edges of net::Server's HTTP/1.1 (RFC 9112) over raw sockets: trailers never join the header,
// a body is framed by Content-Length or chunked alone, a refusal reaches a client still sending its body,
// a response to HEAD has no content, a stream cut by stop() may say so, and failed accepts are logged once a
// second at most.
#include <gtest/gtest.h>

#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "net/server.hpp"
#include "support/child_process.hpp"
#include "support/http.hpp"
#include "support/wait.hpp"
#include "test_server.hpp"

using namespace std::chrono_literals;
using namespace warden;
using net::asio::awaitable;
using net_test::TestServer;

namespace {

// Answers with every header field it was given ("name: value" lines) and the body.
net::Handler fields_handler() {
  return [](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    std::string out;
    for (const auto& f : req) {
      out += std::string(f.name_string()) + ": " + std::string(f.value()) + "\n";
    }
    co_return net::make_response(req, 200, out + "body=" + req.body(), "text/plain");
  };
}

std::string post_with(std::string_view framing, std::string_view body) {
  return "POST /p HTTP/1.1\r\nHost: a\r\n" + std::string(framing) + "\r\n" + std::string(body);
}

// A client that writes its whole body before it reads (Python's urllib): blocking sends of `body_bytes`
// after `head`, then everything the server said. `sent_all`: no send failed (urllib gives up on the
// first failure, before it reads anything).
std::string send_all_then_read(int port, const std::string& head, std::size_t body_bytes, bool& sent_all) {
  const int fd = test_support::raw_connect(port);
  sent_all = ::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size());
  const std::string chunk(64u << 10, 'x');
  for (std::size_t sent = 0; sent_all && sent < body_bytes;) {
    const ssize_t n = ::send(fd, chunk.data(), std::min(chunk.size(), body_bytes - sent), MSG_NOSIGNAL);
    sent_all = n > 0;
    sent += n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

// A field after a chunked body (a trailer) must not read as one of the header: a second Authorization
// or a replica pin there would reach the handler, and the engine behind it.
TEST(NetServerEdges, TrailersNeverJoinTheHeader) {
  TestServer s(fields_handler());
  const std::string got = test_support::raw_exchange(
      s.port(),
      post_with("Transfer-Encoding: chunked\r\nConnection: close\r\n",
                "5\r\nhello\r\n0\r\nAuthorization: Bearer sneaky\r\nX-Warden-Replica: 1\r\n\r\n"),
      5s);
  EXPECT_EQ(test_support::raw_status(got), 200) << got;
  EXPECT_NE(got.find("body=hello"), std::string::npos) << got;
  EXPECT_NE(got.find("Transfer-Encoding: chunked"), std::string::npos) << got;
  EXPECT_EQ(got.find("sneaky"), std::string::npos) << got;
  EXPECT_EQ(got.find("X-Warden-Replica"), std::string::npos) << got;
}

// A trailer that repeats a header's name is dropped like any other, and the header's own fields all
// reach the handler in their order (Beast files such a trailer next to its namesake, not at the end: cut
// at a count, the header lost its last field, e.g. anthropic-beta, and kept the trailer).
TEST(NetServerEdges, ATrailerRepeatingAHeadersNameIsDroppedAndTheHeaderKept) {
  TestServer s(fields_handler());
  const std::string got = test_support::raw_exchange(
      s.port(),
      post_with("Authorization: Bearer real\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
                "anthropic-beta: tools-1\r\n",
                "5\r\nhello\r\n0\r\nAuthorization: Bearer sneaky\r\n\r\n"),
      5s);
  EXPECT_EQ(test_support::raw_status(got), 200) << got;
  EXPECT_EQ(got.find("sneaky"), std::string::npos) << got;
  EXPECT_NE(got.find("Authorization: Bearer real\n"), std::string::npos) << got;
  EXPECT_NE(got.find("anthropic-beta: tools-1\nbody=hello"), std::string::npos) << got;
}

// RFC 9112, 3.2: an HTTP/1.1 request without Host, with an empty one or with two is answered 400 (with
// two, the first used to win here while a proxy in front may have read the second); HTTP/1.0 may omit it.
TEST(NetServerEdges, MissingEmptyOrDuplicateHostIs400) {
  TestServer s(fields_handler());
  for (const std::string head :
       {"GET /h HTTP/1.1\r\n", "GET /h HTTP/1.1\r\nHost:\r\n", "GET /h HTTP/1.1\r\nHost: a\r\nHost: b\r\n",
        "GET /h HTTP/1.0\r\nHost: a\r\nHost: b\r\n"}) {
    const std::string got = test_support::raw_exchange(s.port(), head + "Connection: close\r\n\r\n", 5s);
    EXPECT_EQ(test_support::raw_status(got), 400) << head << got;
    EXPECT_EQ(got.find("body="), std::string::npos) << got;
  }
  const std::string old = test_support::raw_exchange(s.port(), "GET /h HTTP/1.0\r\n\r\n", 5s);
  EXPECT_EQ(test_support::raw_status(old), 200) << old;
}

// A response to HEAD has GET's header and no content: on a keep-alive connection the next response must
// start right after that header (a client read the body of a 404 to HEAD as a broken next response).
TEST(NetServerEdges, AResponseToHeadHasNoContentAndTheConnectionGoesOn) {
  TestServer s(fields_handler());
  const std::string got = test_support::raw_exchange(
      s.port(), "HEAD /h HTTP/1.1\r\nHost: a\r\n\r\nGET /g HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
      5s);
  const auto second = got.find("HTTP/1.1 200", 1);
  ASSERT_NE(second, std::string::npos) << got;
  const std::string head = got.substr(0, second);
  EXPECT_EQ(test_support::raw_status(head), 200) << got;
  EXPECT_TRUE(head.ends_with("\r\n\r\n")) << "content after the header of a response to HEAD:\n" << got;
  EXPECT_EQ(head.find("body="), std::string::npos) << got;
  EXPECT_NE(head.find("Content-Length: "), std::string::npos) << got;
  EXPECT_NE(got.find("body=", second), std::string::npos) << got;
}

// Only `chunked`, alone, frames a body by transfer coding: any other coding, or one before chunked that
// would have to be decoded, is answered 501 and the connection closed.
TEST(NetServerEdges, TransferCodingsOtherThanChunkedAre501) {
  TestServer s(fields_handler());
  for (const std::string framing : {"Transfer-Encoding: xchunked\r\n", "Transfer-Encoding: gzip, chunked\r\n",
                                    "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
                                    "Transfer-Encoding: chunked, gzip\r\n"}) {
    const std::string got =
        test_support::raw_exchange(s.port(), post_with(framing, "5\r\nhello\r\n0\r\n\r\n"), 5s);
    EXPECT_EQ(test_support::raw_status(got), 501) << framing << got;
    EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
    EXPECT_EQ(got.find("body="), std::string::npos) << got;
  }
}

// Transfer-Encoding with Content-Length (two parsers could split the bytes in two ways: request smuggling)
// is 400 and the connection closed, in either order: what follows is never read as a request.
TEST(NetServerEdges, TransferEncodingWithContentLengthIs400InEitherOrder) {
  TestServer s(fields_handler());
  const std::string smuggled = "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n";
  for (const std::string framing : {"Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n",
                                    "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                                    "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
                                    "Content-Length: 5\r\nTransfer-Encoding: xchunked\r\n"}) {
    const std::string got = test_support::raw_exchange(s.port(), post_with(framing, "hello" + smuggled), 5s);
    EXPECT_EQ(test_support::raw_status(got), 400) << framing << got;
    EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
    EXPECT_EQ(got.find("/smuggled"), std::string::npos) << got;
  }
}

// A refusal decided from the header (413 here, 401 from on_header) reaches a client that sends its whole
// body before reading, instead of a reset.
TEST(NetServerEdges, AnEarlyRefusalReachesAClientStillSendingItsBody) {
  net::ServerOptions o;
  o.max_body_bytes = 20u << 20;
  o.on_header = [](const net::http::request_header<>& h) -> net::HeaderVerdict {
    if (h.target() != "/locked") {
      return net::BodyAllowance{20u << 20, true};
    }
    net::Response r{net::http::status::unauthorized, 11};
    r.body() = "no key";
    return r;
  };
  TestServer s(fields_handler(), o);
  // Bodies larger than what the kernel buffers on loopback: without the lingering close the client's
  // sends fail with a reset.
  for (const auto& [target, body, status] :
       {std::tuple{"/p", std::size_t{32} << 20, 413}, std::tuple{"/locked", std::size_t{16} << 20, 401}}) {
    bool sent_all = false;
    const std::string got = send_all_then_read(s.port(),
                                               "POST " + std::string(target) + " HTTP/1.1\r\nHost: a\r\n" +
                                                   "Content-Length: " + std::to_string(body) + "\r\n\r\n",
                                               body, sent_all);
    EXPECT_TRUE(sent_all) << target;
    EXPECT_EQ(test_support::raw_status(got), status) << got.substr(0, 200);
  }
}

// stop() with a stream in flight: its body is cancelled, can tell it was cut, and writes one last event
// that reaches the client; the chunked body stays unterminated.
TEST(NetServerEdges, AStreamCutByStopMaySaySo) {
  std::atomic<bool> streaming{false};
  TestServer s([&](net::Request& req, const net::ConnectionInfo&) -> awaitable<net::Reply> {
    net::StreamReply r = net::sse_reply(req);
    r.body = [&](net::StreamWriter& w) -> awaitable<void> {
      co_await w.write("data: first\n\n");
      streaming = true;
      try {
        net::asio::steady_timer t(co_await net::asio::this_coro::executor, 60s);
        co_await t.async_wait(net::asio::use_awaitable);
      } catch (const boost::system::system_error&) {
      }
      if (w.cut()) {
        co_await net::asio::this_coro::reset_cancellation_state();
        co_await w.write("data: cut\n\n");
        w.abort();
      }
    };
    co_return r;
  });
  const int fd = test_support::raw_connect(s.port());
  const std::string req = "GET /s HTTP/1.1\r\nHost: a\r\n\r\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  ASSERT_TRUE(test_support::wait_until([&] { return streaming.load(); }, 10s));
  s.stop();
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  EXPECT_NE(got.find("data: first"), std::string::npos) << got;
  EXPECT_NE(got.find("data: cut"), std::string::npos) << got;
  EXPECT_FALSE(got.ends_with("0\r\n\r\n")) << got;
}

// With its descriptors exhausted a server fails every accept, 20 times a second: the log says so once a
// second at most, with the count.
TEST(NetServerEdges, FailedAcceptsAreLoggedOnceASecondWithACount) {
  test_support::ChildProcess sim({"/usr/bin/prlimit", "--nofile=40:40", WARDEN_BINARY, "sim", "--port", "0",
                                  "--preset", "instant", "--log-level", "warn"});
  const int port = sim.wait_for_port();
  std::vector<int> held;
  for (int i = 0; i < 60; ++i) {
    held.push_back(test_support::raw_connect(port));  // completed by the kernel, waiting in the backlog
  }
  const bool summed = test_support::wait_until(
      [&] { return sim.stderr_text().find("times since the last report") != std::string::npos; }, 10s);
  const std::string log = sim.stderr_text();
  for (int fd : held) {
    ::close(fd);
  }
  ASSERT_TRUE(summed) << log;
  std::size_t lines = 0;
  for (auto at = log.find("accept failed"); at != std::string::npos; at = log.find("accept failed", at + 1)) {
    ++lines;
  }
  EXPECT_LE(lines, 3u) << log;  // the first at once, then one a second
  EXPECT_NE(log.find("Too many open files"), std::string::npos) << log;
}
