#include "core/task_growth.hpp"

#include <algorithm>

namespace warden::core {

void TaskGrowth::ended(std::uint64_t tokens) {
  if (recent_.size() < window) {
    recent_.push_back(tokens);
  } else {
    recent_[next_] = tokens;
    next_ = (next_ + 1) % window;
  }
  sorted_ = recent_;
  std::sort(sorted_.begin(), sorted_.end());
  suffix_.assign(sorted_.size() + 1, 0.0);
  for (std::size_t i = sorted_.size(); i-- > 0;) {
    suffix_[i] = suffix_[i + 1] + static_cast<double>(sorted_[i]);
  }
}

double TaskGrowth::mean() const {
  return sorted_.empty() ? 0.0 : suffix_[0] / static_cast<double>(sorted_.size());
}

double TaskGrowth::left(double grown) const {
  // The first ended task that grew more than `grown`; every one from it on did.
  const auto first = std::upper_bound(sorted_.begin(), sorted_.end(), grown,
                                      [](double g, std::uint64_t t) { return g < static_cast<double>(t); });
  const auto from = static_cast<std::size_t>(first - sorted_.begin());
  const std::size_t further = sorted_.size() - from;
  return further == 0 ? 0.0 : suffix_[from] / static_cast<double>(further) - std::max(0.0, grown);
}

void TaskGrowth::clear() {
  recent_.clear();
  sorted_.clear();
  suffix_.clear();
  next_ = 0;
}

}  // namespace warden::core
