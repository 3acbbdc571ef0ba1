#pragma once
// How much an agent task's context grows, as the tasks that ended showed it: the growth of each (its main
// thread's last prompt less its first), the last `window` of them. It answers what a task under way that has
// grown so much already is still expected to add: the mean of what the ended tasks that grew further went on
// to add past that point (the mean residual growth). Tasks of a length one cannot foresee (an agent stops
// when its work is done, after any number of tool rounds) keep adding about a task's mean whatever they
// grew; tasks of one length add less the further they are. Pure.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace warden::core {

class TaskGrowth {
 public:
  static constexpr std::size_t window = 32;

  /// A task ended, its context grown by `tokens` from its first request to its last.
  void ended(std::uint64_t tokens);
  /// Whether any task ended yet (nothing to judge by before).
  [[nodiscard]] bool known() const { return !recent_.empty(); }
  /// A task's mean growth (0 before any ended).
  [[nodiscard]] double mean() const;
  /// What a task that has grown by `grown` so far is expected to add: the mean of (growth - grown) over the
  /// ended tasks that grew more than `grown`; 0 when none did (or none ended).
  [[nodiscard]] double left(double grown) const;
  /// Forgets every ended task.
  void clear();

 private:
  std::vector<std::uint64_t> recent_;  // the last `window` growths, in a ring
  std::size_t next_ = 0;               // where the next one goes once the ring is full
  std::vector<std::uint64_t> sorted_;  // recent_, ascending
  std::vector<double> suffix_;         // suffix_[i]: the sum of sorted_[i..]
};

}  // namespace warden::core
