// net::UpstreamResponse::next() against a raw upstream that controls exactly which bytes are on the wire
// when: chunks already buffered come out as one piece, and chunks split across reads still come out
// byte-exact.

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "net/client.hpp"

using namespace std::chrono_literals;
using namespace warden;
using net::asio::awaitable;

namespace {

// Writes `parts` one by one on an accepted connection; before each part after the first it waits for the
// client to have taken the previous piece (so each part is a separate read on the client side).
void raw_upstream(net::tcp::acceptor& acceptor, const std::vector<std::string>& parts,
                  std::vector<std::future<void>>& taken) {
  net::tcp::socket sock(acceptor.get_executor());
  acceptor.accept(sock);
  std::string request;
  net::asio::read_until(sock, net::asio::dynamic_buffer(request), "\r\n\r\n");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0 && taken[i - 1].wait_for(10s) != std::future_status::ready) {
      return;  // the client is stuck: the test fails on its side
    }
    net::asio::write(sock, net::asio::buffer(parts[i]));
  }
  // Keep the connection open until the client has seen the end (so it can go back to the pool).
  taken.back().wait_for(10s);
}

}  // namespace

TEST(NetClient, NextReturnsEveryBufferedChunkAtOnceAndHandlesSplitChunks) {
  const std::string head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::vector<std::string> parts = {
      // Header and three complete chunks in one write: one piece with all three.
      head + "9\r\ndata: a\n\n\r\n9\r\ndata: b\n\n\r\n9\r\ndata: c\n\n\r\n",
      // A chunk header and only part of its data.
      "f\r\ndata: split",
      // The rest of that chunk's data, its CRLF and the first digit of the next chunk's size.
      "-x\n\n\r\n1",
      // The rest of that size (0x10), its data and the last chunk.
      "0\r\ndata: 01234567\n\n\r\n0\r\n\r\n",
  };
  const std::vector<std::string> expected = {
      "data: a\n\ndata: b\n\ndata: c\n\n",
      "data: split",
      "-x\n\n",
      "data: 01234567\n\n",
  };
  std::vector<std::promise<void>> took(parts.size() + 1);  // one per piece, then "finished"
  std::vector<std::future<void>> taken;
  for (auto& p : took) {
    taken.push_back(p.get_future());
  }

  net::asio::io_context ioc;
  net::tcp::acceptor acceptor(ioc, {net::asio::ip::make_address("127.0.0.1"), 0});
  const auto port = acceptor.local_endpoint().port();
  std::thread upstream([&] { raw_upstream(acceptor, parts, taken); });

  std::vector<std::string> pieces;
  bool done = false;
  std::string error;
  std::size_t idle_after = 0;
  {
    net::ClientPool pool(ioc.get_executor());
    net::asio::co_spawn(
        ioc,
        [&]() -> awaitable<void> {
          net::Request req{net::http::verb::get, "/stream", 11};
          const net::Endpoint ep{"127.0.0.1",
                                 port};  // a named local: GCC 12 mishandles temporaries in co_await
          auto r = co_await pool.send(ep, std::move(req));
          if (!r) {
            error = r.error().message();
            co_return;
          }
          while (pieces.size() <= parts.size()) {
            auto piece = co_await r->next();
            if (!piece) {
              error = piece.error().message();
              co_return;
            }
            if (piece->done) {
              done = true;
              break;
            }
            pieces.emplace_back(piece->data);
            if (pieces.size() <= parts.size()) {
              took[pieces.size() - 1].set_value();
            }
          }
          idle_after = pool.idle_connections();
          took.back().set_value();
        },
        net::asio::detached);
    ioc.run_for(20s);
  }  // the pool closes its idle connection: the upstream thread sees EOF
  upstream.join();

  EXPECT_EQ(error, "");
  EXPECT_EQ(pieces, expected);
  EXPECT_TRUE(done);
  EXPECT_EQ(idle_after, 1u);  // the body ended cleanly: the connection went back to the pool
}

// An engine answering an `Expect: 100-continue` (or sending 103 Early Hints) sends interim responses
// before the final one: they are skipped, in one read or split across reads, and the final one is the
// response.
TEST(NetClient, InterimResponsesAreSkippedUntilTheFinalOne) {
  const std::vector<std::string> parts = {
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 1",
      "00 Continue\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
  };
  std::vector<std::promise<void>> took(parts.size());
  std::vector<std::future<void>> taken;
  for (auto& p : took) {
    taken.push_back(p.get_future());
  }
  took[0].set_value();  // the parts go out one after the other, each a separate read at best
  took[1].set_value();
  net::asio::io_context ioc;
  net::tcp::acceptor acceptor(ioc, {net::asio::ip::make_address("127.0.0.1"), 0});
  const auto port = acceptor.local_endpoint().port();
  std::thread upstream([&] { raw_upstream(acceptor, parts, taken); });
  unsigned status = 0;
  std::string body;
  {
    net::ClientPool pool(ioc.get_executor());
    net::asio::co_spawn(
        ioc,
        [&]() -> awaitable<void> {
          net::Request req{net::http::verb::post, "/v1/chat/completions", 11};
          req.body() = "{}";
          const net::Endpoint ep{"127.0.0.1", port};
          auto r = co_await pool.send(ep, std::move(req));
          if (r) {
            status = r->status();
            auto all = co_await r->read_all(1024);
            body = all ? *all : "";
          }
          took.back().set_value();
        },
        net::asio::detached);
    ioc.run_for(20s);
  }
  upstream.join();
  EXPECT_EQ(status, 200u);
  EXPECT_EQ(body, "ok");
}

namespace {

void read_request(net::tcp::socket& s) {
  std::string request;
  net::asio::read_until(s, net::asio::dynamic_buffer(request), "\r\n\r\n");
}

// Answers a first GET on a keep-alive connection, reads the next request on it and closes it after writing
// `before_close` (empty: the peer closed the idle connection just as the request went out); with `retried`
// it then answers the request again on a new connection.
void closing_upstream(net::tcp::acceptor& acceptor, const std::string& before_close, bool retried) {
  net::tcp::socket first(acceptor.get_executor());
  acceptor.accept(first);
  read_request(first);
  net::asio::write(first, net::asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")));
  read_request(first);
  if (!before_close.empty()) {
    net::asio::write(first, net::asio::buffer(before_close));
  }
  first.close();
  if (retried) {
    net::tcp::socket next(acceptor.get_executor());
    acceptor.accept(next);
    read_request(next);
    net::asio::write(next, net::asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok2")));
  }
}

struct TwoGets {
  std::string first;
  std::string second;
  boost::system::error_code error;  // of the second
  net::PoolStats stats;
};

// Two GETs one after the other through one pool: the second goes out on the first's pooled connection.
TwoGets two_gets(const std::string& before_close, bool retried) {
  net::asio::io_context ioc;
  net::tcp::acceptor acceptor(ioc, {net::asio::ip::make_address("127.0.0.1"), 0});
  const auto port = acceptor.local_endpoint().port();
  std::thread upstream([&] { closing_upstream(acceptor, before_close, retried); });
  TwoGets out;
  {
    net::ClientPool pool(ioc.get_executor());
    net::asio::co_spawn(
        ioc,
        [&]() -> awaitable<void> {
          const net::Endpoint ep{"127.0.0.1", port};
          for (std::string* body : {&out.first, &out.second}) {
            auto r = co_await pool.send(ep, net::Request{net::http::verb::get, "/", 11});
            if (!r) {
              out.error = r.error();
              break;
            }
            auto all = co_await r->read_all(1024);
            *body = all ? *all : "";
          }
          out.stats = pool.stats();
        },
        net::asio::detached);
    ioc.run_for(20s);
  }
  upstream.join();
  return out;
}

}  // namespace

// A pooled connection the peer closes as the request goes out, before any byte of a response: the request
// is sent again once on a new connection. A byte of a response already read means the request may have run:
// no retry.
TEST(NetClient, StalePooledConnectionIsRetriedOnlyBeforeAnyResponseByte) {
  const TwoGets stale = two_gets("", true);
  EXPECT_EQ(stale.first, "ok");
  EXPECT_FALSE(stale.error);
  EXPECT_EQ(stale.second, "ok2");
  EXPECT_EQ(stale.stats.reuses, 1u);
  EXPECT_EQ(stale.stats.stale_retries, 1u);
  EXPECT_EQ(stale.stats.connects, 2u);

  const TwoGets cut = two_gets("HTTP/1.1 2", false);
  EXPECT_EQ(cut.first, "ok");
  EXPECT_EQ(cut.error, net::ClientErrc::closed_before_response);
  EXPECT_EQ(cut.stats.stale_retries, 0u);
  EXPECT_EQ(cut.stats.connects, 1u);
}
