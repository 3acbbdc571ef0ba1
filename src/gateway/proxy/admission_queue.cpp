#include "gateway/proxy/admission_queue.hpp"

#include "core/task_admission.hpp"

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

namespace warden::gateway {

namespace asio = boost::asio;

AdmissionQueue::AdmissionQueue(asio::any_io_executor ex, RouteAgain route_again)
    : route_again_(std::move(route_again)), timer_(ex), alive_(std::make_shared<bool>(true)) {}

AdmissionQueue::~AdmissionQueue() {
  *alive_ = false;
}

void AdmissionQueue::configure(const core::RoutingConfig& routing) {
  max_queue_ = routing.admission.max_queue;
  max_wait_ = core::longest_hold(routing);
  admission_wait_ = routing.admission.max_wait;
  arm_timer();
}

AdmissionQueue::Clock::duration AdmissionQueue::max_wait(const core::RequestFacts& facts) const {
  return core::starts_new_task(facts) ? max_wait_ : std::min<Clock::duration>(admission_wait_, max_wait_);
}

std::shared_ptr<AdmissionQueue::Entry> AdmissionQueue::join(const core::RequestFacts& facts,
                                                            Clock::time_point now) {
  if (stopped_ || entries_.size() >= max_queue_) {
    return nullptr;
  }
  auto entry = std::make_shared<Entry>(timer_.get_executor());
  entry->facts = facts;
  entry->since = now;
  entries_.push_back(entry);
  if (entries_.size() == 1) {
    arm_timer();
  }
  return entry;
}

asio::awaitable<void> AdmissionQueue::wait(std::shared_ptr<Entry> entry) {
  try {
    while (entry->outcome == Outcome::waiting) {
      co_await entry->wake.wait();
    }
  } catch (const boost::system::system_error&) {
    leave(*entry);
    throw;
  }
}

void AdmissionQueue::leave(const Entry& entry) {
  const auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.get() == &entry; });
  if (it == entries_.end()) {
    return;
  }
  const bool head = it == entries_.begin();
  entries_.erase(it);
  if (head) {
    arm_timer();
  }
}

std::size_t AdmissionQueue::task_starts() const {
  return static_cast<std::size_t>(std::count_if(
      entries_.begin(), entries_.end(), [](const auto& e) { return core::starts_new_task(e->facts); }));
}

std::size_t AdmissionQueue::retry(Clock::time_point now) {
  std::size_t went = 0;
  while (!entries_.empty()) {
    Entry& head = *entries_.front();
    core::RequestFacts facts = head.facts;
    facts.queued_for = std::chrono::duration_cast<core::Time>(now - head.since);
    core::Decision d = route_again_(facts);
    if (d.queued()) {
      break;  // still held: nobody behind it goes first
    }
    head.decision = d;
    head.outcome = Outcome::routed;
    head.wake.notify();
    entries_.pop_front();
    ++went;
  }
  if (went > 0) {
    arm_timer();
  }
  return went;
}

void AdmissionQueue::stop() {
  stopped_ = true;
  timer_.cancel();
  for (const auto& e : entries_) {
    e->outcome = Outcome::refused;
    e->wake.notify();
  }
  entries_.clear();
}

void AdmissionQueue::arm_timer() {
  if (entries_.empty() || stopped_) {
    timer_.cancel();
    return;
  }
  // Routed again at its bound, the head is admitted whatever the room (the core's rule).
  timer_.expires_at(entries_.front()->since + max_wait_);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) {
      retry(Clock::now());
    }
  });
}

}  // namespace warden::gateway
