#pragma once
// A read timeout for a socket that costs a clock read per read instead of a timer-queue update and a
// cancelled wait: one timer per connection, armed when a deadline is first set and, when it fires early
// (the deadline moved on meanwhile), re-armed for the current one. A relay that reads one engine event at
// a time sets a new deadline before every read; this keeps that off the path of each event.
//
//   ReadDeadline d(socket);
//   d.expires_after(std::chrono::seconds(60));
//   auto [ec, n] = co_await socket.async_read_some(...);   // operation_aborted and d.expired(): timed out
//
// The socket must outlive the ReadDeadline (both live in one connection object).

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>

namespace warden::net {

class ReadDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ReadDeadline(boost::asio::ip::tcp::socket& socket)
      : socket_(socket), timer_(socket.get_executor()) {}
  ReadDeadline(const ReadDeadline&) = delete;
  ReadDeadline& operator=(const ReadDeadline&) = delete;

  /// From now on, the socket's pending operations are cancelled once `d` has passed (until the next
  /// expires_after() or disarm()).
  void expires_after(Clock::duration d) {
    deadline_ = Clock::now() + d;
    expired_ = false;
    if (!armed_ || deadline_ < timer_.expiry()) {
      arm();  // (re-arming earlier cancels the pending wait)
    }
  }
  /// No deadline, lazily: an armed timer runs out at its time and finds nothing to do. Cheaper than
  /// disarm() when the io_context runs on anyway (a server between the reads of its requests).
  void clear() noexcept { deadline_ = Clock::time_point::max(); }
  /// No deadline (a connection back in its pool): the timer is cancelled, so it holds no io_context.
  void disarm() noexcept {
    deadline_ = Clock::time_point::max();
    if (armed_) {
      timer_.cancel();
      armed_ = false;
    }
  }
  /// The last deadline passed and cancelled the socket's operations.
  bool expired() const noexcept { return expired_; }

 private:
  void arm() {
    armed_ = true;
    timer_.expires_at(deadline_);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) {
        return;  // cancelled: re-armed, disarmed or destroyed (then `this` is gone): nothing to do
      }
      armed_ = false;
      if (deadline_ == Clock::time_point::max()) {
        return;
      }
      if (Clock::now() >= deadline_) {
        expired_ = true;
        boost::system::error_code ignored;
        socket_.cancel(ignored);
        return;
      }
      arm();  // the deadline moved on since this wait began
    });
  }

  boost::asio::ip::tcp::socket& socket_;
  boost::asio::steady_timer timer_;
  Clock::time_point deadline_ = Clock::time_point::max();
  bool armed_ = false;
  bool expired_ = false;
};

}  // namespace warden::net
