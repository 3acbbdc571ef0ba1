#include "app/service_status.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <utility>

#include "gateway/gateway.hpp"
#include "net/server.hpp"
#include "net/service_notify.hpp"

namespace warden::app {

ServiceStatus::ServiceStatus(boost::asio::io_context& ioc, net::ServiceNotifier& notifier)
    : ioc_(ioc), notifier_(notifier) {}

void ServiceStatus::watch_drain(net::ServerOptions& options) {
  options.on_drain = [this, before = std::move(options.on_drain)] {
    if (before) {
      before();
    }
    stopping();
  };
}

void ServiceStatus::start(gateway::Gateway& gateway) {
  if (!notifier_.enabled()) {
    return;
  }
  boost::asio::co_spawn(ioc_, net::watchdog_pings(notifier_),
                        boost::asio::bind_cancellation_slot(watchdog_cancel_.slot(), boost::asio::detached));
  boost::asio::post(ioc_, [this, &gateway] {
    gateway.when_scraped([this] {
      if (!stopping_) {
        spdlog::info("systemd: ready (listening, engines scraped once)");
        notifier_.notify_ready();
      }
    });
  });
}

void ServiceStatus::stopping() {
  if (std::exchange(stopping_, true)) {
    return;
  }
  notifier_.notify_stopping();
}

void ServiceStatus::stopped() {
  stopping();
  watchdog_cancel_.emit(boost::asio::cancellation_type::terminal);
}

}  // namespace warden::app
