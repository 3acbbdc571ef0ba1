// The requests of one model that admission holds back (route `queued`), on the gateway's I/O thread: the
// rules of their wait are core::HoldQueue's (core/hold_queue.hpp: first come first served, the bound on
// the queue's length, the head's deadline, Retry-After); this puts them to work with a timer at the head's
// deadline and a wake-up for each waiter. The held requests are routed again whenever room may have freed
// (a request of the model finished, a scrape of its replicas arrived, its routing changed) and when the
// head's deadline comes, in the core's fair turn (interactive first, then by the tenants' shares of the
// tasks under way, which `TenantLoad` counts). A waiter whose client leaves is cancelled and leaves the
// queue, so it is never sent. It counts what it held and let in by class of work. Not thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/hold_queue.hpp"
#include "core/types.hpp"
#include "net/notifier.hpp"

namespace warden::gateway {

class AdmissionQueue {
 public:
  using Clock = std::chrono::steady_clock;
  // Routes a held request again; its facts carry queued_for = the time it has waited so far.
  using RouteAgain = std::function<core::Decision(const core::RequestFacts&)>;
  // A tenant's tasks under way (core::Router::tasks_of_tenant): its share used.
  using TenantLoad = std::function<double(std::uint64_t tenant)>;

  enum class Outcome { waiting, routed, refused };

  // One held request.
  struct Entry {
    explicit Entry(const boost::asio::any_io_executor& ex) : wake(ex) {}
    core::RequestFacts facts;
    Outcome outcome = Outcome::waiting;
    core::Decision decision;  // routed: where it goes (a replica's in_flight is counted already)
    net::Notifier wake;
  };

  AdmissionQueue(boost::asio::any_io_executor ex, RouteAgain route_again, TenantLoad tenant_load = {});
  ~AdmissionQueue();
  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;

  // The bounds (core::hold_rules); a shorter wait applies to the requests already waiting.
  void configure(const core::RoutingConfig& routing);
  // Joins at the tail; nullptr when max_queue requests wait already (or the queue was stopped).
  std::shared_ptr<Entry> join(const core::RequestFacts& facts, Clock::time_point now);
  // Returns once `entry` was routed or refused. Cancelled (its client left), it leaves the queue and the
  // cancellation propagates (operation_aborted).
  boost::asio::awaitable<void> wait(std::shared_ptr<Entry> entry);
  // Returns false when keep_alive() is false: the client's wait can no longer be kept alive.
  using KeepAlive = std::function<boost::asio::awaitable<bool>()>;
  // The same wait, calling `keep_alive` each `every` while it lasts (a held stream's keep-alive event).
  // When it fails (the client is gone), the entry leaves the queue and operation_aborted is thrown, as
  // for a cancelled wait.
  boost::asio::awaitable<void> wait(std::shared_ptr<Entry> entry, Clock::duration every,
                                    KeepAlive keep_alive);
  // Takes `entry` out without a wait (its client left before waiting began).
  void leave(const std::shared_ptr<Entry>& entry);
  // Routes the waiting requests again (a round of core::HoldQueue::retry); returns how many went.
  std::size_t retry(Clock::time_point now);
  // Ends every wait as refused, and refuses new requests from now on (shutdown).
  void stop();

  std::size_t size() const { return held_.size(); }
  // Of the waiting requests, the first requests of new agent tasks (what task admission holds).
  std::size_t task_starts() const { return held_.task_starts(); }
  bool stopped() const { return held_.stopped(); }
  // How long a request of `facts` joining now may wait at most (for Retry-After: core::HoldQueue::max_wait).
  Clock::duration max_wait(const core::RequestFacts& facts) const { return held_.max_wait(facts); }

  // One class of work's requests: held now, let in since the start, and the sum of their waits.
  struct ClassFigures {
    std::size_t held = 0;
    std::uint64_t let_in = 0;
    double waited_s = 0;
  };
  std::array<ClassFigures, core::work_class_count> by_class() const;
  // One held request, as the admin API shows it.
  struct HeldRequest {
    core::WorkClass work_class = core::WorkClass::headless;
    std::uint64_t tenant = 0;
    double weight = 1;
    double waited_s = 0;
  };
  // The held requests, the oldest first.
  std::vector<HeldRequest> held(Clock::time_point now) const;
  // How many requests each tenant holds now (0: those naming none), in the order the tenants were met.
  std::vector<std::pair<std::uint64_t, std::size_t>> held_by_tenant() const;

 private:
  core::Retried route_again(Entry& entry, core::Time waited);
  void arm_timer();

  RouteAgain route_again_;
  TenantLoad tenant_load_;
  std::array<ClassFigures, core::work_class_count> let_in_{};  // let_in and waited_s
  core::HoldQueue<std::shared_ptr<Entry>> held_;               // since = Clock's time since its epoch
  boost::asio::steady_timer timer_;                            // the head's deadline
  std::shared_ptr<bool> alive_;  // the timer's handler may run after this is gone
};

}  // namespace warden::gateway
