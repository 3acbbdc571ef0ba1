#pragma once
// A coroutine wake-up signal: notify() from the same executor wakes (or pre-arms) one wait(). Used to
// hand events from a producer (e.g. an engine stepper) to a consumer coroutine (e.g. a stream body).
// wait() honours cancellation: a cancelled waiter throws operation_aborted, so a stream body blocked in
// wait() unwinds at once when its client disconnects.
//
//   net::Notifier n(ex);
//   // producer: queue.push_back(ev); n.notify();
//   // consumer: while (queue.empty()) co_await n.wait();

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

namespace warden::net {

class Notifier {
 public:
  explicit Notifier(boost::asio::any_io_executor ex) : ch_(ex, 1) {}
  /// Wakes a pending wait() or makes the next wait() return at once. Coalesces.
  void notify() { ch_.try_send(boost::system::error_code{}); }
  /// Returns after a notify() (possibly one made before the call).
  boost::asio::awaitable<void> wait() { co_await ch_.async_receive(boost::asio::use_awaitable); }
  /// Fails every current and future wait() with operation_aborted (e.g. at shutdown).
  void close() { ch_.close(); }

 private:
  boost::asio::experimental::channel<void(boost::system::error_code)> ch_;
};

}  // namespace warden::net
