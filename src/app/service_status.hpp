#pragma once
// `serve` under systemd (Type=notify, docs/deployment.md): READY=1 once the listener is up and every engine
// URL has been scraped once, WATCHDOG=1 pings from the event loop, STOPPING=1 when the drain (or an
// immediate stop) begins; the pings end when the server stops. Without $NOTIFY_SOCKET every call is a no-op.
// A reload of the configuration reports itself with net::service_notifier().notify_reloading(), then
// notify_ready().

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

namespace warden::gateway {
class Gateway;
}
namespace warden::net {
class ServiceNotifier;
struct ServerOptions;
}  // namespace warden::net

namespace warden::app {

class ServiceStatus {
 public:
  ServiceStatus(boost::asio::io_context& ioc, net::ServiceNotifier& notifier);
  ServiceStatus(const ServiceStatus&) = delete;
  ServiceStatus& operator=(const ServiceStatus&) = delete;

  /// Makes the start of the server's drain say STOPPING=1 (after the gateway's own on_drain).
  void watch_drain(net::ServerOptions& options);
  /// Starts the watchdog pings and sends READY=1 after the gateway's first scrapes. Both begin once the
  /// io_context runs, which net::run_until_signal does only after the listener is bound.
  void start(gateway::Gateway& gateway);
  /// STOPPING=1 (once). The pings go on while requests drain: the event loop still has to answer them.
  void stopping();
  /// STOPPING=1 if not said yet, and the end of the pings (the server has stopped).
  void stopped();

 private:
  boost::asio::io_context& ioc_;
  net::ServiceNotifier& notifier_;
  boost::asio::cancellation_signal watchdog_cancel_;
  bool stopping_ = false;
};

}  // namespace warden::app
