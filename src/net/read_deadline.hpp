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
// The socket must outlive the ReadDeadline (both live in one connection object or session).

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>

namespace warden::net {

class ReadDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ReadDeadline(boost::asio::ip::tcp::socket& socket)
      : state_(std::make_shared<State>(&socket)), timer_(socket.get_executor()) {}
  ReadDeadline(const ReadDeadline&) = delete;
  ReadDeadline& operator=(const ReadDeadline&) = delete;
  // A wait that completed but whose handler has not run yet outlives this object: it finds the socket
  // gone in the shared state and does nothing.
  ~ReadDeadline() { state_->socket = nullptr; }

  /// From now on, the socket's pending operations are cancelled once `d` has passed (until the next
  /// expires_after() or disarm()).
  void expires_after(Clock::duration d) {
    state_->deadline = Clock::now() + d;
    state_->expired = false;
    if (!state_->armed || state_->deadline < timer_.expiry()) {
      arm(state_, timer_);  // (re-arming earlier cancels the pending wait)
    }
  }
  /// No deadline, lazily: an armed timer runs out at its time and finds nothing to do. Cheaper than
  /// disarm() when the io_context runs on anyway (a server between the reads of its requests).
  void clear() noexcept { state_->deadline = Clock::time_point::max(); }
  /// No deadline (a connection back in its pool): the timer is cancelled, so it holds no io_context.
  void disarm() noexcept {
    state_->deadline = Clock::time_point::max();
    if (state_->armed) {
      timer_.cancel();
      state_->armed = false;
    }
  }
  /// The last deadline passed and cancelled the socket's operations.
  bool expired() const noexcept { return state_->expired; }

 private:
  struct State {
    explicit State(boost::asio::ip::tcp::socket* s) : socket(s) {}
    boost::asio::ip::tcp::socket* socket;  // null once the ReadDeadline is gone
    Clock::time_point deadline = Clock::time_point::max();
    bool armed = false;
    bool expired = false;
  };

  static void arm(const std::shared_ptr<State>& state, boost::asio::steady_timer& timer) {
    state->armed = true;
    timer.expires_at(state->deadline);
    timer.async_wait([state, &timer](const boost::system::error_code& ec) {
      if (ec || state->socket == nullptr) {
        return;  // cancelled (re-armed, disarmed, destroyed), or the ReadDeadline is gone
      }
      state->armed = false;
      if (state->deadline == Clock::time_point::max()) {
        return;
      }
      if (Clock::now() >= state->deadline) {
        state->expired = true;
        boost::system::error_code ignored;
        state->socket->cancel(ignored);
        return;
      }
      arm(state, timer);  // the deadline moved on since this wait began (the timer lives: socket set)
    });
  }

  std::shared_ptr<State> state_;
  boost::asio::steady_timer timer_;
};

}  // namespace warden::net
