#pragma once
// `simulate --placement-overrides`: how much load the preference for a cached prompt start overrode. Of
// the new conversations and threads each policy placed at each level, those sent to a replica whose
// placement score was above the lowest (rule 7 of decide.hpp: a replica that holds part of the prompt, at
// comparable load), with the difference in requests + conversations and in the memory term.

#include <map>
#include <string>
#include <utility>

#include "whatif/driver.hpp"

namespace warden::app {

class PlacementOverrides {
 public:
  /// Tallies one routing decision (a whatif::Hooks::on_decision callback).
  void observe(const whatif::DecisionTrace& trace);
  /// One line per policy and level.
  [[nodiscard]] std::string summary() const;

 private:
  struct Tally {
    std::size_t placed = 0;
    std::size_t overridden = 0;
    std::map<long, std::size_t> more_slots;  // requests + conversations more than the least-loaded: count
    double max_memory = 0;                   // largest memory-term difference overridden
    double max_score = 0;                    // largest placement-score difference overridden
  };
  std::map<std::pair<std::string, int>, Tally> tallies_;
};

}  // namespace warden::app
