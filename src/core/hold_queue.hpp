#pragma once
// The requests of one model that admission holds back (route `queued`) and the rules of their wait, written
// once for the gateway's admission (gateway/runtime/admission_queue.hpp puts a queue on the I/O thread, with
// the timer and the waiters' wake-ups) and the what-if driver (in model seconds). Pure: no clock of its
// own, every time is an argument.
//
// - First come, first served. A round routes the held requests again from the head (the caller does so
//   whenever room may have freed: a request finished, a scrape arrived, the routing changed, the head's
//   deadline came), and the first one still held ends it, so no later request overtakes it. Under
//   admission's hold_task_starts every held request is asked instead: each task start waits for its own
//   home, which may have room while the head's has not; those still held keep their order.
// - A request that admission could hold joins behind the held ones without being routed (waits_behind()).
// - Bounded: with max_queue requests waiting a new one is refused at once; after stop() every one is.
// - The head is routed again at its deadline, when it has waited the longest hold (core::longest_hold);
//   routed that late the rules that held it admit it whatever the room.
// - A refused request is told to retry after as long as a request like it may wait (max_wait()).
//
//   HoldQueue<std::uint64_t, double> queue(hold_rules(routing));
//   if (!queue.join(id, facts, now)) { /* refused: 503 with Retry-After: queue.max_wait(facts) */ }
//   queue.retry(now, [&](std::uint64_t& id, Time waited) { return route(id, waited); });
//   if (const auto at = queue.deadline()) { /* wake at *at and retry */ }
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "core/task_admission.hpp"
#include "core/types.hpp"

namespace warden::core {

/// The bounds and the order of one model's hold queue, from its routing (hold_rules()).
struct HoldRules {
  std::size_t max_queue = AdmissionConfig{}.max_queue;  ///< held requests beyond which one is refused
  Time longest = AdmissionConfig{}.max_wait;            ///< the head's deadline after it joined
  Time admission_wait = AdmissionConfig{}.max_wait;     ///< the bound of a request that starts no task
  bool every_request = false;                           ///< a round asks every held request

  friend bool operator==(const HoldRules&, const HoldRules&) = default;
};

/// admission.max_queue, the longest hold (core::longest_hold), admission's own max_wait, and a round of
/// every held request when admission holds task starts.
[[nodiscard]] HoldRules hold_rules(const RoutingConfig& routing);

/// What a round did with one held request (the caller's routing of it).
enum class Retried : std::uint8_t {
  went,  ///< routed: it leaves the queue
  held,  ///< held again: it stays, and in a first-come round nobody behind it is asked
  stop,  ///< the caller failed: the round ends, the request stays
};

/// The two clocks a queue runs on: the gateway's (Time since the steady clock's epoch) and the what-if
/// driver's model seconds. waited(): the wait from `since` to `now`; later(): `since` plus `wait`.
constexpr Time waited(Time since, Time now) {
  return now - since;
}
inline Time waited(double since, double now) {
  return Time(static_cast<std::int64_t>(std::llround((now - since) * 1e9)));
}
constexpr Time later(Time since, Time wait) {
  return since + wait;
}
inline double later(double since, Time wait) {
  return since + std::chrono::duration<double>(wait).count();
}

/// `Item` names a held request for the caller (equality-comparable); `Instant` is Time or double.
template <class Item, class Instant = Time>
class HoldQueue {
 public:
  explicit HoldQueue(HoldRules rules = {}) : rules_(rules) {}

  /// New bounds; a shorter wait applies to the requests already waiting.
  void configure(const HoldRules& rules) { rules_ = rules; }
  [[nodiscard]] const HoldRules& rules() const { return rules_; }

  /// Joins at the tail; false (refused) when max_queue requests wait already or the queue was stopped.
  [[nodiscard]] bool join(Item item, const RequestFacts& facts, Instant now) {
    if (stopped_ || held_.size() >= rules_.max_queue) {
      return false;
    }
    held_.push_back(Held{std::move(item), now, starts_new_task(facts)});
    return true;
  }

  /// A request admission could hold (`could_be_held`) arrives: while any wait, it joins behind them
  /// without being routed.
  [[nodiscard]] bool waits_behind(bool could_be_held) const { return could_be_held && !held_.empty(); }

  /// One round: `route(Item&, Time waited)` -> Retried for each request asked, from the head. Returns how
  /// many went.
  template <class Route>
  std::size_t retry(Instant now, Route&& route) {
    return rules_.every_request ? retry_every(now, route) : retry_until_held(now, route);
  }

  /// When the head has waited the longest hold; none while nothing waits.
  [[nodiscard]] std::optional<Instant> deadline() const {
    if (held_.empty()) {
      return std::nullopt;
    }
    return later(held_.front().since, rules_.longest);
  }

  /// The longest a request of `facts` joining now may wait (a refusal's Retry-After): the first request of
  /// a new agent task the longest hold, any other at most admission's own bound.
  [[nodiscard]] Time max_wait(const RequestFacts& facts) const {
    return starts_new_task(facts) ? rules_.longest : std::min(rules_.admission_wait, rules_.longest);
  }

  /// Takes `item` out (its client left); true when it was the head (the deadline moved).
  bool leave(const Item& item) {
    const auto it = std::find_if(held_.begin(), held_.end(), [&](const Held& h) { return h.item == item; });
    if (it == held_.end()) {
      return false;
    }
    const bool head = it == held_.begin();
    held_.erase(it);
    return head;
  }

  /// Refuses every held request (returned, the head first) and every later one (shutdown).
  std::vector<Item> stop() {
    stopped_ = true;
    std::vector<Item> out;
    for (Held& h : held_) {
      out.push_back(std::move(h.item));
    }
    held_.clear();
    return out;
  }

  [[nodiscard]] std::size_t size() const { return held_.size(); }
  [[nodiscard]] bool empty() const { return held_.empty(); }
  [[nodiscard]] bool stopped() const { return stopped_; }
  /// Of the held requests, the first requests of new agent tasks (what task admission holds).
  [[nodiscard]] std::size_t task_starts() const {
    return static_cast<std::size_t>(
        std::count_if(held_.begin(), held_.end(), [](const Held& h) { return h.task_start; }));
  }

 private:
  struct Held {
    Item item;
    Instant since;
    bool task_start = false;
  };

  template <class Route>
  std::size_t retry_until_held(Instant now, Route& route) {
    std::size_t went = 0;
    while (!held_.empty()) {
      Held& head = held_.front();
      if (route(head.item, waited(head.since, now)) != Retried::went) {
        break;  // still held (or failed): nobody behind it goes first
      }
      held_.pop_front();
      ++went;
    }
    return went;
  }

  template <class Route>
  std::size_t retry_every(Instant now, Route& route) {
    std::size_t went = 0;
    std::deque<Held> still;
    while (!held_.empty()) {
      Held h = std::move(held_.front());
      held_.pop_front();
      const Retried r = route(h.item, waited(h.since, now));
      if (r == Retried::went) {
        ++went;
        continue;
      }
      still.push_back(std::move(h));
      if (r == Retried::stop) {
        std::move(held_.begin(), held_.end(), std::back_inserter(still));
        break;
      }
    }
    held_ = std::move(still);
    return went;
  }

  HoldRules rules_;
  std::deque<Held> held_;  // the head first
  bool stopped_ = false;
};

}  // namespace warden::core
