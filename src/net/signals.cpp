// run_until_signal: the process's signals around a Server (server.hpp): listen, announce, drain, stop.
#include "net/server.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>

namespace warden::net {

namespace {

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGHUP:
      return "SIGHUP";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    default:
      return "signal";
  }
}

// The one line scripts and tests wait for, flushed: "listening on http://HOST:PORT" (https with TLS).
void announce_listening(const tcp::endpoint& ep, bool tls) {
  const std::string host =
      ep.address().is_v6() ? "[" + ep.address().to_string() + "]" : ep.address().to_string();
  std::printf("listening on %s://%s:%u\n", tls ? "https" : "http", host.c_str(),
              static_cast<unsigned>(ep.port()));
  std::fflush(stdout);
}

// The signals of a running server. The first stopping signal (SIGTERM, SIGINT, SIGQUIT) drains for up to
// drain_grace; the end of the drain, the grace period or a second one stops the server. SIGHUP reloads
// when there is on_reload; SIGHUP without it, SIGUSR1 and SIGUSR2 are logged and ignored.
class ServerSignals {
 public:
  ServerSignals(asio::io_context& ioc, Server& server, std::function<void()> on_stop,
                std::function<void()> on_reload)
      : signals_(ioc),
        grace_(ioc),
        server_(server),
        on_stop_(std::move(on_stop)),
        on_reload_(std::move(on_reload)) {
    for (int sig : {SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2}) {
      signals_.add(sig);
    }
  }

  // Starts waiting; the object must outlive the io_context's run.
  void wait() {
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) { on_signal(ec, sig); });
  }

 private:
  void on_signal(const boost::system::error_code& ec, int sig) {
    if (ec || stopping_) {
      return;
    }
    if (sig == SIGHUP && on_reload_) {
      spdlog::info("SIGHUP: reloading the configuration");
      on_reload_();
    } else if (sig == SIGHUP || sig == SIGUSR1 || sig == SIGUSR2) {
      spdlog::warn("{} ignored: it has no meaning here (SIGTERM, SIGINT or SIGQUIT stop)", signal_name(sig));
    } else {
      begin_stop(sig);
    }
    if (!stopping_) {
      wait();
    }
  }

  void begin_stop(int sig) {
    const auto period = server_.options().drain_grace;
    if (server_.draining() || period.count() <= 0) {
      spdlog::info("{}: shutting down now ({} requests in flight cut)", signal_name(sig),
                   server_.requests_in_flight());
      stop_now();
      return;
    }
    spdlog::info("{}: draining {} requests in flight (up to {} ms; a second signal cuts now)",
                 signal_name(sig), server_.requests_in_flight(), period.count());
    server_.drain([this] {
      spdlog::info("drained: shutting down");
      stop_now();
    });
    grace_.expires_after(period);
    grace_.async_wait([this](const boost::system::error_code& gec) {
      if (!gec) {
        spdlog::warn("shutdown grace period over: cutting {} requests in flight",
                     server_.requests_in_flight());
        stop_now();
      }
    });
  }

  void stop_now() {
    if (std::exchange(stopping_, true)) {
      return;
    }
    boost::system::error_code ignored;
    signals_.cancel(ignored);
    grace_.cancel();
    server_.stop();
    if (on_stop_) {
      on_stop_();
    }
  }

  asio::signal_set signals_;
  asio::steady_timer grace_;
  Server& server_;
  std::function<void()> on_stop_;
  std::function<void()> on_reload_;
  bool stopping_ = false;
};

}  // namespace

int run_until_signal(asio::io_context& ioc, Server& server, std::function<void()> on_stop,
                     std::function<void()> on_reload) {
  // A write to a socket or pipe whose reader is gone must fail with EPIPE, not end the process. (Engines
  // a launcher starts get the default back: supervisor/process.cpp.)
  std::signal(SIGPIPE, SIG_IGN);
  // Caught before listening: from the "listening on" line on, no signal below ends the process silently.
  ServerSignals signals(ioc, server, std::move(on_stop), std::move(on_reload));
  auto ep = server.listen();
  if (!ep) {
    spdlog::error("cannot listen on {}:{}: {}", server.options().host, server.options().port,
                  ep.error().message());
    return 1;
  }
  announce_listening(*ep, server.tls());
  signals.wait();
  asio::co_spawn(ioc, server.run(), [](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        spdlog::error("accept loop: {}", ex.what());
      }
    }
  });
  ioc.run();
  return 0;
}

}  // namespace warden::net
