// SplitMix64 (Steele, Lea and Flood): the one integer mixer of the project. Its output is fixed by its input
// on every platform (never std::hash or std::rand, whose output differs between standard libraries).
#pragma once

#include <cstdint>

namespace warden::base {

// The golden-ratio increment SplitMix64 adds to its state at every step.
inline constexpr std::uint64_t kSplitMixGamma = 0x9E3779B97F4A7C15ULL;

// SplitMix64's finaliser: spreads every input bit over all 64 output bits (a bijection).
constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

// One SplitMix64 step from `x`, as a stateless hash: the value a generator seeded with `x` yields first.
constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  return mix64(x + kSplitMixGamma);
}

// A tiny, well-mixed generator whose sequence is fixed by its seed.
class SplitMix64 {
 public:
  explicit constexpr SplitMix64(std::uint64_t seed) noexcept : state_(seed) {}
  constexpr std::uint64_t next() noexcept {
    state_ += kSplitMixGamma;
    return mix64(state_);
  }
  // Uniform in [0, bound) up to modulo bias (irrelevant for small bounds); bound > 0.
  constexpr std::uint64_t below(std::uint64_t bound) noexcept { return next() % bound; }

 private:
  std::uint64_t state_;
};

}  // namespace warden::base
