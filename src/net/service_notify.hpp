#pragma once
// systemd's service notifications (sd_notify(3)) without libsystemd: one datagram per state change to the
// unix socket named by $NOTIFY_SOCKET (a leading '@' names an abstract socket). A unit with Type=notify
// counts the service started at READY=1, and with WatchdogSec= restarts it when the WATCHDOG=1 pings stop.
// Nothing is sent when the variable is absent (not started by systemd, or not Type=notify).
//
//   net::ServiceNotifier& n = net::service_notifier();   // the process's, read from the environment once
//   n.notify_ready();                                      // listening and scraped
//   asio::co_spawn(ioc, net::watchdog_pings(n), ...);     // from the event loop: a hung loop stops them
//   n.notify_reloading(); /* re-read the config */ n.notify_ready();
//   n.notify_stopping();                                   // the drain begins

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace warden::net {

class ServiceNotifier {
 public:
  ServiceNotifier() = default;  // sends nothing
  /// `socket`: a path, or '@' and an abstract name. `watchdog_timeout`: systemd's WatchdogSec (0: none).
  ServiceNotifier(std::string socket, std::chrono::microseconds watchdog_timeout);
  /// From $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID (a watchdog meant for another process is
  /// ignored). Unsets the three so that child processes (launched engines) cannot speak for this one.
  static ServiceNotifier from_environment();

  bool enabled() const noexcept { return !socket_.empty(); }
  /// How often watchdog_pings() pings: half the watchdog timeout, as sd_watchdog_enabled(3) advises. 0: no
  /// watchdog.
  std::chrono::microseconds watchdog_interval() const noexcept { return watchdog_timeout_ / 2; }

  /// Sends `message` ("KEY=VALUE" lines) as one datagram without blocking. False when disabled or the
  /// send failed (logged once).
  bool send(std::string_view message) const;
  void notify_ready() const { send("READY=1"); }
  void notify_stopping() const { send("STOPPING=1"); }
  void notify_watchdog() const { send("WATCHDOG=1"); }
  /// RELOADING=1 with the CLOCK_MONOTONIC time systemd (Type=notify-reload) wants with it; send
  /// notify_ready() once the reload is done (or refused: the old configuration is running again).
  void notify_reloading() const;

 private:
  std::string socket_;
  std::chrono::microseconds watchdog_timeout_{0};
  mutable bool failure_logged_ = false;
};

/// The process's notifier, read from the environment at the first call. One thread (the event loop).
ServiceNotifier& service_notifier();

/// WATCHDOG=1 every watchdog_interval() from the executor it runs on, until cancelled. Returns at once
/// without a watchdog.
boost::asio::awaitable<void> watchdog_pings(const ServiceNotifier& notifier);

}  // namespace warden::net
