// Turns for the admin API's expensive reads (GET /api/models/{name}/sessions): a page is built at most
// every kSpacing (10 a second, whoever reads), in the order the reads came, and a read waits for its turn
// instead of being refused. Readers that loop then wait on a timer, costing nothing, rather than spinning
// on refusals: four of them once took another model's chat from 0.4 to 0.9 ms at p50 with 20,000 answers
// of 429 a second. Only a read that would wait longer than kMaxWait is refused, told when to come back.
// Pure: time passed in.
#pragma once

#include <algorithm>
#include <chrono>

namespace warden::gateway {

class PageTurns {
 public:
  using Clock = std::chrono::steady_clock;
  /// One page at most this often.
  static constexpr Clock::duration kSpacing = std::chrono::milliseconds(100);
  /// A read waits this long at most (so at most 20 reads wait); past it, it is refused.
  static constexpr Clock::duration kMaxWait = std::chrono::seconds(2);

  struct Turn {
    bool granted = false;
    Clock::time_point at{};               // when the page may be built (granted)
    std::chrono::seconds retry_after{0};  // when to come back (refused): a turn within kMaxWait then
  };

  /// The turn of a read arriving at `now`: at `now` or after the turns already given, or refused.
  Turn take(Clock::time_point now) {
    const Clock::time_point at = std::max(now, last_ + kSpacing);
    if (at - now > kMaxWait) {
      const auto back = std::chrono::ceil<std::chrono::seconds>(at - kMaxWait - now);
      return {.granted = false, .at = at, .retry_after = std::max(back, std::chrono::seconds(1))};
    }
    last_ = at;
    return {.granted = true, .at = at};
  }

 private:
  Clock::time_point last_{};  // the latest turn given
};

}  // namespace warden::gateway
