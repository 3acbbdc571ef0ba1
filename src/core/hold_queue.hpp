#pragma once
// The requests of one model that admission holds back (route `queued`) and the rules of their wait, written
// once for the gateway's admission (gateway/runtime/admission_queue.hpp puts a queue on the I/O thread, with
// the timer and the waiters' wake-ups) and the what-if driver (in model seconds). Pure: no clock of its
// own, every time is an argument.
//
// - Fair, not first come first served. A round routes the held requests again in turn (the caller does so
//   whenever room may have freed: a request finished, a scrape arrived, the routing changed, the oldest
//   one's deadline came), and the first one still held ends it, so nobody after it in turn goes first.
//   Under admission's hold_task_starts every held request is asked instead: each task start waits for its
//   own home, which may have room while another's has not. The turn: interactive requests before headless
//   ones (RequestFacts::work_class); then the tenant with the least of its fair share used
//   ((its tasks under way, as the caller counts them, + those let in this round) / its weight); then,
//   within a tenant, each session's oldest request before any session's second; then the oldest. The
//   requests that name no tenant (0) are one fleet, first come first served among themselves (as the
//   what-if driver's agents are): with them alone, or one tenant and a request a session, and one class,
//   the turn is the order of arrival.
// - A request that admission could hold joins behind the held ones without being routed (waits_behind()).
// - Bounded: with max_queue requests waiting a new one is refused at once, and so is one whose tenant holds
//   tenant_queue already (no tenant fills the queue for the others; requests that name no tenant, 0, are
//   one fleet and bounded by max_queue alone); after stop() every one is.
// - Each held request is routed again at its deadline, when it has waited its longest hold
//   (core::longest_hold: a request whose client's wait is kept alive, RequestFacts::kept_alive, by task
//   admission's stream_max_wait, any other by its max_wait): a request that waited that long comes first in
//   the turn, and routed that late the rules that held it admit it whatever the room. The queue's deadline
//   is the earliest of its requests'.
// - A refused request is told to retry after as long as a request like it may wait (max_wait()).
//
//   HoldQueue<std::uint64_t, double> queue(hold_rules(routing));
//   if (!queue.join(id, facts, now)) { /* refused: 503 with Retry-After: queue.max_wait(facts) */ }
//   queue.retry(now, [&](std::uint64_t& id, Time waited) { return route(id, waited); },
//               [&](std::uint64_t tenant) { return tasks_under_way_of(tenant); });
//   if (const auto at = queue.deadline()) { /* wake at *at and retry */ }
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "core/task_admission.hpp"
#include "core/types.hpp"

namespace warden::core {

/// The bounds and the order of one model's hold queue, from its routing (hold_rules()).
struct HoldRules {
  std::size_t max_queue = AdmissionConfig{}.max_queue;         ///< held requests beyond which one is refused
  Time longest = AdmissionConfig{}.max_wait;                   ///< a request's deadline after it joined
  Time kept_alive_longest = AdmissionConfig{}.max_wait;        ///< the same for a request kept alive
  Time admission_wait = AdmissionConfig{}.max_wait;            ///< the bound of a request that starts no task
  bool every_request = false;                                  ///< a round asks every held request
  std::size_t tenant_queue = AdmissionConfig{}.max_queue / 2;  ///< held requests of one tenant at most

  friend bool operator==(const HoldRules&, const HoldRules&) = default;
};

/// admission.max_queue and tenant_queue, the longest holds (core::longest_hold) of a request kept alive and
/// of any other, admission's own max_wait, and a round of every held request when admission holds task
/// starts.
[[nodiscard]] HoldRules hold_rules(const RoutingConfig& routing);

/// admission.tenant_queue, or auto: half of max_queue (at least 1).
[[nodiscard]] std::size_t tenant_queue(const AdmissionConfig& admission);

/// The order of a round among held requests (HoldQueue's turn): what each is, the tenant's weight.
struct HeldTurn {
  WorkClass work_class = WorkClass::headless;
  std::uint64_t tenant = 0;
  double weight = 1;
  std::uint64_t session = 0;  ///< its session's key (0: none; each such request a session of its own)
};

/// The turn of one held request in a round: lower goes first (HoldQueue, "Fair").
struct TurnKey {
  int due = 1;            ///< 0 when it has waited its longest hold: it goes first, whatever the room
  int work_class = 0;     ///< 0 interactive, 1 headless
  double share = 0;       ///< (tenant's tasks under way + let in this round) / weight
  std::size_t round = 0;  ///< how many of its session's held requests are older (a named tenant's)
  std::size_t arrival = 0;

  friend auto operator<=>(const TurnKey&, const TurnKey&) = default;
};

/// The tenant's count of tasks under way when the caller counts none.
struct NoTasksUnderWay {
  double operator()(std::uint64_t /*tenant*/) const { return 0; }
};

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

  /// Joins; false (refused) when max_queue requests wait already, its tenant (one it names: requests of
  /// tenant 0 share the queue as one fleet) holds tenant_queue, or the queue was stopped.
  [[nodiscard]] bool join(Item item, const RequestFacts& facts, Instant now) {
    if (stopped_ || held_.size() >= rules_.max_queue ||
        (facts.tenant != 0 && held_of(facts.tenant) >= rules_.tenant_queue)) {
      return false;
    }
    held_.push_back(Held{std::move(item), now, starts_new_task(facts), facts.kept_alive, turn_of(facts),
                         next_arrival_++});
    return true;
  }

  /// A request admission could hold (`could_be_held`) arrives: while any wait, it joins behind them
  /// without being routed.
  [[nodiscard]] bool waits_behind(bool could_be_held) const { return could_be_held && !held_.empty(); }

  /// One round: `route(Item&, Time waited)` -> Retried for each request asked, in turn; `under_way(tenant)`
  /// -> the tenant's tasks under way (its share used). Returns how many went.
  template <class Route, class UnderWay = NoTasksUnderWay>
  std::size_t retry(Instant now, Route&& route, UnderWay&& under_way = {}) {
    std::vector<Asked> turn = turn_of_round(now, under_way);
    std::size_t went = 0;
    std::vector<bool> gone(held_.size(), false);
    for (std::size_t step = 0; step < held_.size(); ++step) {
      const std::size_t next = next_in_turn(turn, gone);
      if (next == held_.size()) {
        break;
      }
      turn[next].asked = true;
      const Retried r = route(held_[next].item, waited(held_[next].since, now));
      if (r == Retried::went) {
        gone[next] = true;
        ++went;
        let_in(turn, held_[next].turn.tenant);
      } else if (r == Retried::stop || !rules_.every_request) {
        break;  // still held (or failed): nobody after it in turn goes first
      }
    }
    drop(gone);
    return went;
  }

  /// The earliest time a held request has waited its longest hold (each by its own: longest_of()); none
  /// while nothing waits.
  [[nodiscard]] std::optional<Instant> deadline() const {
    std::optional<Instant> first;
    for (const Held& h : held_) {
      const Instant at = due_at(h);
      if (!first || at < *first) {
        first = at;
      }
    }
    return first;
  }

  /// The longest a request of `facts` joining now may wait (a refusal's Retry-After): the first request of
  /// a new agent task its longest hold (kept alive or not), any other at most admission's own bound.
  [[nodiscard]] Time max_wait(const RequestFacts& facts) const {
    const Time longest = longest_of(facts.kept_alive);
    return starts_new_task(facts) ? longest : std::min(rules_.admission_wait, longest);
  }

  /// Takes `item` out (its client left); true when the queue's deadline moved.
  bool leave(const Item& item) {
    const auto it = std::find_if(held_.begin(), held_.end(), [&](const Held& h) { return h.item == item; });
    if (it == held_.end()) {
      return false;
    }
    const std::optional<Instant> before = deadline();
    held_.erase(it);
    return deadline() != before;
  }

  /// Refuses every held request (returned, the oldest first) and every later one (shutdown).
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
  /// The held requests of `tenant`.
  [[nodiscard]] std::size_t held_of(std::uint64_t tenant) const {
    return static_cast<std::size_t>(
        std::count_if(held_.begin(), held_.end(), [&](const Held& h) { return h.turn.tenant == tenant; }));
  }
  /// Calls `f(item, HeldTurn, since)` for each held request, the oldest first (the admin API, metrics).
  template <class F>
  void for_each(F&& f) const {
    for (const Held& h : held_) {
      f(h.item, h.turn, h.since);
    }
  }

 private:
  struct Held {
    Item item;
    Instant since;
    bool task_start = false;
    bool kept_alive = false;
    HeldTurn turn;
    std::size_t arrival = 0;
  };
  // A held request's place in this round's turn.
  struct Asked {
    TurnKey key;
    bool asked = false;
  };

  // The longest hold of a request kept alive or not.
  [[nodiscard]] Time longest_of(bool kept_alive) const {
    return kept_alive ? rules_.kept_alive_longest : rules_.longest;
  }
  [[nodiscard]] Instant due_at(const Held& h) const { return later(h.since, longest_of(h.kept_alive)); }

  static HeldTurn turn_of(const RequestFacts& facts) {
    return {.work_class = facts.work_class,
            .tenant = facts.tenant,
            .weight = facts.tenant_weight > 0 ? facts.tenant_weight : 1.0,
            .session =
                facts.thread.session != 0 ? facts.thread.session : (facts.session ? facts.session->hash : 0)};
  }

  template <class UnderWay>
  std::vector<Asked> turn_of_round(Instant now, UnderWay& under_way) const {
    std::vector<Asked> turn(held_.size());
    std::vector<std::pair<std::uint64_t, double>> used;  // per tenant, in the order met
    for (std::size_t i = 0; i < held_.size(); ++i) {
      const HeldTurn& t = held_[i].turn;
      auto it = std::find_if(used.begin(), used.end(), [&](const auto& u) { return u.first == t.tenant; });
      if (it == used.end()) {
        it = used.insert(used.end(), {t.tenant, static_cast<double>(under_way(t.tenant))});
      }
      std::size_t round = 0;
      for (std::size_t j = 0; j < i; ++j) {
        const HeldTurn& o = held_[j].turn;
        round += t.tenant != 0 && t.session != 0 && o.session == t.session && o.tenant == t.tenant ? 1 : 0;
      }
      turn[i].key = {.due = waited(held_[i].since, now) >= longest_of(held_[i].kept_alive) ? 0 : 1,
                     .work_class = t.work_class == WorkClass::interactive ? 0 : 1,
                     .share = it->second / t.weight,
                     .round = round,
                     .arrival = held_[i].arrival};
    }
    return turn;
  }

  // The first in turn of those not asked yet; held_.size() when every one was.
  static std::size_t next_in_turn(const std::vector<Asked>& turn, const std::vector<bool>& gone) {
    std::size_t best = turn.size();
    for (std::size_t i = 0; i < turn.size(); ++i) {
      if (!turn[i].asked && !gone[i] && (best == turn.size() || turn[i].key < turn[best].key)) {
        best = i;
      }
    }
    return best;
  }

  // A request of `tenant` went: the tenant's share used grows by one task.
  void let_in(std::vector<Asked>& turn, std::uint64_t tenant) const {
    for (std::size_t i = 0; i < turn.size(); ++i) {
      if (held_[i].turn.tenant == tenant) {
        turn[i].key.share += 1.0 / held_[i].turn.weight;
      }
    }
  }

  void drop(const std::vector<bool>& gone) {
    std::deque<Held> still;
    for (std::size_t i = 0; i < held_.size(); ++i) {
      if (!gone[i]) {
        still.push_back(std::move(held_[i]));
      }
    }
    held_ = std::move(still);
  }

  HoldRules rules_;
  std::deque<Held> held_;  // the oldest first
  std::size_t next_arrival_ = 0;
  bool stopped_ = false;
};

}  // namespace warden::core
