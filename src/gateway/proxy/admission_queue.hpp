// The requests of one model that admission holds back (route `queued`), first come first served. They are
// routed again from the head whenever room may have freed (a request of the model finished, a scrape of
// its replicas arrived, its routing changed) and when the head has waited admission.max_wait; the first
// one still held ends the round, so no later request overtakes it. Bounded: with max_queue requests
// waiting a new one is refused at once. A waiter whose client leaves is cancelled and leaves the queue,
// so it is never sent. Lives on the gateway's I/O thread; not thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/types.hpp"
#include "net/notifier.hpp"

namespace warden::gateway {

class AdmissionQueue {
 public:
  using Clock = std::chrono::steady_clock;
  // Routes a held request again; its facts carry queued_for = the time it has waited so far.
  using RouteAgain = std::function<core::Decision(const core::RequestFacts&)>;

  enum class Outcome { waiting, routed, refused };

  // One held request.
  struct Entry {
    explicit Entry(const boost::asio::any_io_executor& ex) : wake(ex) {}
    core::RequestFacts facts;
    Clock::time_point since;
    Outcome outcome = Outcome::waiting;
    core::Decision decision;  // routed: where it goes (a replica's in_flight is counted already)
    net::Notifier wake;
  };

  AdmissionQueue(boost::asio::any_io_executor ex, RouteAgain route_again);
  ~AdmissionQueue();
  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;

  // The bounds (admission's max_queue, the longest hold: core::longest_hold); a shorter wait applies to the
  // requests already waiting.
  void configure(const core::RoutingConfig& routing);
  // Joins at the tail; nullptr when max_queue requests wait already (or the queue was stopped).
  std::shared_ptr<Entry> join(const core::RequestFacts& facts, Clock::time_point now);
  // Returns once `entry` was routed or refused. Cancelled (its client left), it leaves the queue and the
  // cancellation propagates (operation_aborted).
  boost::asio::awaitable<void> wait(std::shared_ptr<Entry> entry);
  // Routes the waiting requests again from the head until one is still held; returns how many went.
  std::size_t retry(Clock::time_point now);
  // Ends every wait as refused, and refuses new requests from now on (shutdown).
  void stop();

  std::size_t size() const { return entries_.size(); }
  // Of the waiting requests, the first requests of new agent tasks (core::starts_new_task: what task
  // admission holds).
  std::size_t task_starts() const;
  bool stopped() const { return stopped_; }
  // How long a request of `facts` joining now may wait at most (for Retry-After): the first request of a
  // new agent task as long as task admission holds it, any other as long as admission does.
  Clock::duration max_wait(const core::RequestFacts& facts) const;

 private:
  void leave(const Entry& entry);
  void arm_timer();

  RouteAgain route_again_;
  std::deque<std::shared_ptr<Entry>> entries_;  // the head first
  boost::asio::steady_timer timer_;             // the head's max_wait
  std::shared_ptr<bool> alive_;                 // the timer's handler may run after this is gone
  std::size_t max_queue_ = core::AdmissionConfig{}.max_queue;
  Clock::duration max_wait_ = core::AdmissionConfig{}.max_wait;        // the longest hold
  Clock::duration admission_wait_ = core::AdmissionConfig{}.max_wait;  // admission's own bound
  bool stopped_ = false;
};

}  // namespace warden::gateway
