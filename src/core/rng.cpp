#include "core/rng.hpp"

#include "base/splitmix.hpp"

namespace warden::core {

namespace {
__extension__ using U128 = unsigned __int128;
}  // namespace

std::uint64_t SplitMixRng::next() {
  const std::uint64_t at = state_;
  state_ += base::kSplitMixGamma;
  return base::splitmix64(at);
}

std::uint64_t SplitMixRng::uniform(std::uint64_t bound) {
  if (bound <= 1) {
    return 0;
  }
  // Lemire's nearly divisionless method with rejection: unbiased, so tie-breaks are truly uniform.
  U128 product = static_cast<U128>(next()) * bound;
  auto low = static_cast<std::uint64_t>(product);
  if (low < bound) {
    const std::uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      product = static_cast<U128>(next()) * bound;
      low = static_cast<std::uint64_t>(product);
    }
  }
  return static_cast<std::uint64_t>(product >> 64);
}

double SplitMixRng::unit() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

std::uint64_t ScriptedRng::uniform(std::uint64_t bound) {
  bounds_.push_back(bound);
  const std::uint64_t value = next_ < script_.size() ? script_[next_++] : fallback_;
  return bound <= 1 ? 0 : value % bound;
}

}  // namespace warden::core
