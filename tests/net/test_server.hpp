// A net::Server on its own io_context thread for the net layer's tests.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <future>
#include <thread>

#include "net/server.hpp"

namespace net_test {

namespace net = warden::net;

// A server on its own io_context thread, stopped and joined by the destructor.
class TestServer {
 public:
  explicit TestServer(net::Handler handler, net::ServerOptions opts = {})
      : server_(ioc_, std::move(opts), std::move(handler)) {
    auto ep = server_.listen();
    EXPECT_TRUE(ep.has_value());
    port_ = ep->port();
    net::asio::co_spawn(ioc_, server_.run(), [this](std::exception_ptr) { run_returned_ = true; });
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~TestServer() {
    stop();
    thread_.join();
  }
  void stop() {
    net::asio::post(ioc_, [this] { server_.stop(); });
  }
  /// Server::set_tls on the server's thread; returns once it is in force.
  void set_tls(std::shared_ptr<net::TlsContext> ctx) {
    std::promise<void> done;
    net::asio::post(ioc_, [&] {
      server_.set_tls(std::move(ctx));
      done.set_value();
    });
    done.get_future().get();
  }
  int port() const { return port_; }
  net::asio::io_context& ioc() { return ioc_; }
  bool run_returned() const { return run_returned_; }
  // Stats are read from the server thread.
  net::ServerStats stats() {
    std::promise<net::ServerStats> p;
    net::asio::post(ioc_, [&] { p.set_value(server_.stats()); });
    return p.get_future().get();
  }

 private:
  net::asio::io_context ioc_;
  net::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> run_returned_{false};
};

}  // namespace net_test
