// SplitMix64: the reference sequence, and the stateless hash agreeing with the generator.
#include <gtest/gtest.h>

#include <cstdint>

#include "base/splitmix.hpp"

namespace warden::base {
namespace {

TEST(SplitMix64, MatchesTheReferenceSequenceForSeedZero) {
  // The first outputs of Vigna's splitmix64.c seeded with 0.
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(rng.next(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(rng.next(), 0x06C45D188009454FULL);
}

TEST(SplitMix64, HashIsTheFirstOutputOfAGeneratorSeededWithIt) {
  for (std::uint64_t x : {0ULL, 1ULL, 42ULL, ~0ULL}) {
    SplitMix64 rng(x);
    EXPECT_EQ(splitmix64(x), rng.next());
    EXPECT_EQ(splitmix64(x), mix64(x + kSplitMixGamma));
  }
}

TEST(SplitMix64, StateWrapsAroundWithoutUndefinedBehaviour) {
  SplitMix64 rng(~0ULL);
  EXPECT_EQ(rng.next(), mix64(~0ULL + kSplitMixGamma));
}

TEST(SplitMix64, FinaliserFixesZeroAndSpreadsOneBit) {
  EXPECT_EQ(mix64(0), 0U);
  const std::uint64_t a = mix64(1);
  const std::uint64_t b = mix64(2);
  EXPECT_GT(__builtin_popcountll(a ^ b), 16);
}

TEST(SplitMix64, BelowStaysInRange) {
  SplitMix64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_LT(rng.below(3), 3U);
  }
  EXPECT_EQ(SplitMix64(7).below(1), 0U);
}

static_assert(splitmix64(0) == 0xE220A8397B1DCDAFULL, "usable in constant expressions");

}  // namespace
}  // namespace warden::base
