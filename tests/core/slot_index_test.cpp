// The slab index grows without a pause: no insert moves more than a small map's entries, and spread over
// its shards it answers exactly as one map would.
#include "core/slot_index.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <unordered_map>

#include "base/splitmix.hpp"

namespace warden::core {
namespace {

TEST(SlotIndex, NoInsertMovesMoreThanASmallMapsEntriesOnTheWayToHalfAMillion) {
  SlotIndex index;
  for (std::uint32_t i = 0; i < 500'000; ++i) {
    index.insert(i, i);  // keys alike: spread all the same
  }
  EXPECT_TRUE(index.sharded());
  EXPECT_EQ(index.size(), 500'000U);
  EXPECT_LT(index.largest_move(), SlotIndex::kOneMap)
      << "a rehash of the whole table, or the one map spread over the others, in one call";
  for (std::uint32_t i = 0; i < 500'000; i += 997) {
    const std::uint32_t* slot = index.find(i);
    ASSERT_NE(slot, nullptr) << i;
    EXPECT_EQ(*slot, i);
  }
}

// The one map's entries go over to the others a step per insert; meanwhile each is found, erased and
// inserted again wherever it is.
TEST(SlotIndex, TheSpreadTakesStepsAndLosesNothingOnTheWay) {
  SlotIndex index(7);
  for (std::uint32_t i = 0; i < SlotIndex::kOneMap; ++i) {
    index.insert(i, i);
  }
  EXPECT_FALSE(index.sharded());
  const std::size_t grown = index.largest_move();  // the one map's doublings
  const std::size_t steps = SlotIndex::kOneMap / SlotIndex::kSpreadStep;
  for (std::uint32_t i = 0; i < steps; ++i) {
    index.insert(1'000'000 + i, i);
    EXPECT_TRUE(index.sharded());
    EXPECT_EQ(index.largest_move(), grown) << "a step moves less than the one map's last doubling did";
    EXPECT_TRUE(index.erase(i * SlotIndex::kSpreadStep)) << "moved or not";
    EXPECT_FALSE(index.contains(i * SlotIndex::kSpreadStep));
    index.insert(i * SlotIndex::kSpreadStep, 7);
    for (std::uint32_t k = 0; k < SlotIndex::kOneMap; k += 61) {
      const std::uint32_t* slot = index.find(k);
      ASSERT_NE(slot, nullptr) << k << " at step " << i;
      EXPECT_EQ(*slot, k % SlotIndex::kSpreadStep == 0 && k / SlotIndex::kSpreadStep <= i ? 7 : k);
    }
  }
  EXPECT_EQ(index.size(), SlotIndex::kOneMap + steps);
}

// Random inserts, erases and lookups, with a standard map beside it, before and after the entries are
// spread over the shards.
TEST(SlotIndex, AnswersAsAMapWhileItGrows) {
  SlotIndex index;
  std::unordered_map<std::uint64_t, std::uint32_t> model;
  std::uint64_t state = 42;
  std::size_t checked_sharded = 0;
  for (std::uint32_t step = 0; step < 600'000; ++step) {
    state = base::splitmix64(state);
    const std::uint64_t key = state % 150'000;  // keys come back: erased, found, inserted again
    const std::uint32_t* slot = index.find(key);
    const auto it = model.find(key);
    ASSERT_EQ(slot != nullptr, it != model.end()) << "step " << step;
    if (slot != nullptr) {
      ASSERT_EQ(*slot, it->second);
    }
    checked_sharded += index.sharded() ? 1 : 0;
    if (state % 3 == 0 && it != model.end()) {
      EXPECT_TRUE(index.erase(key));
      model.erase(it);
    } else if (it == model.end()) {
      index.insert(key, step);
      model.emplace(key, step);
    } else {
      EXPECT_FALSE(index.erase(key + 1'000'000)) << "never inserted";
    }
    ASSERT_EQ(index.size(), model.size());
  }
  EXPECT_GT(checked_sharded, 1'000U) << "the test must spread the entries";
  EXPECT_LT(checked_sharded, 600'000U) << "and see them in one map first";
  index.clear();
  EXPECT_EQ(index.size(), 0U);
  EXPECT_FALSE(index.sharded());
  EXPECT_EQ(index.find(state % 150'000), nullptr);
}

}  // namespace
}  // namespace warden::core
