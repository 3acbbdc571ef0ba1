#pragma once
// Randomness is injected into every decision (Envoy style) so tests can script it and the what-if driver
// stays deterministic. The core never seeds from a clock or a device; callers choose the seed.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace warden::core {

/// Source of uniform integers. Decisions use it only to break ties, so an idle fleet is spread evenly.
class Rng {
 public:
  virtual ~Rng() = default;
  /// Uniform integer in [0, bound). `bound` >= 1 (0 is treated as 1 and returns 0).
  virtual std::uint64_t uniform(std::uint64_t bound) = 0;
};

/// Deterministic, seedable PRNG (SplitMix64 + Lemire's unbiased range reduction). SplitMix64 is
/// counter-based: the state advances by a constant, and a copy continues the same sequence. One instance
/// serves every Router of the gateway, all on its one I/O thread (docs/architecture.md, "Threads").
class SplitMixRng final : public Rng {
 public:
  explicit SplitMixRng(std::uint64_t seed = 0x9E3779B97F4A7C15ULL) : state_(seed) {}
  std::uint64_t next();
  std::uint64_t uniform(std::uint64_t bound) override;
  /// Uniform double in [0, 1).
  double unit();

 private:
  std::uint64_t state_;
};

/// Scripted RNG for exact-pick tests: returns the scripted values in order (each reduced modulo the bound),
/// then `fallback` once the script is used up. Records every bound it was asked for, so a test can assert
/// whether (and among how many candidates) a tie was broken.
class ScriptedRng final : public Rng {
 public:
  explicit ScriptedRng(std::vector<std::uint64_t> script = {}, std::uint64_t fallback = 0)
      : script_(std::move(script)), fallback_(fallback) {}
  std::uint64_t uniform(std::uint64_t bound) override;

  [[nodiscard]] const std::vector<std::uint64_t>& bounds_asked() const { return bounds_; }
  [[nodiscard]] std::size_t calls() const { return bounds_.size(); }

 private:
  std::vector<std::uint64_t> script_;
  std::uint64_t fallback_;
  std::size_t next_ = 0;
  std::vector<std::uint64_t> bounds_;
};

}  // namespace warden::core
