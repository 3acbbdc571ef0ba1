// The table of where each prompt start was served: bounded, the least recently served start going first,
// one for each new one (never half the table in one request).
#include "core/start_homes.hpp"

#include <gtest/gtest.h>

namespace warden::core {
namespace {

TEST(StartHomes, BeyondItsBoundTheLeastRecentlyServedStartGoesAlone) {
  StartHomes starts(4);
  for (std::uint64_t s = 1; s <= 4; ++s) {
    starts.served(s, static_cast<ReplicaIndex>(s % 2), /*thread=*/100 + s);
  }
  starts.served(1, 3);  // start 1 served again: now the most recent
  starts.served(5, 0);
  EXPECT_EQ(starts.size(), 4U) << "one start went for the new one, not half the table";
  EXPECT_EQ(starts.find(2), 0U) << "the least recently served start went";
  EXPECT_EQ(starts.find(1), (ReplicaSet{1} << 1) | (ReplicaSet{1} << 3)) << "a start served again stays";
  EXPECT_EQ(starts.witness(1, 1), 101U);
  EXPECT_NE(starts.find(3), 0U);
  EXPECT_NE(starts.find(4), 0U);
  EXPECT_NE(starts.find(5), 0U);
  starts.served(6, 0);
  EXPECT_EQ(starts.find(3), 0U) << "then the next least recent";
  EXPECT_EQ(starts.witness(3, 1), 0U);
  EXPECT_EQ(starts.size(), 4U);
}

TEST(StartHomes, AStartThatWentComesBackEmpty) {
  StartHomes starts(2);
  starts.served(7, 2, 70);
  starts.set_length(7, 1'234);
  starts.served(8, 0);
  starts.served(9, 0);
  EXPECT_EQ(starts.length(7), 0U);
  EXPECT_EQ(starts.threads(7), StartHomes::Threads{});
  starts.served(7, 1);
  EXPECT_EQ(starts.find(7), ReplicaSet{1} << 1)
      << "its slot reused, nothing of the start that held it before";
  EXPECT_EQ(starts.witness(7, 2), 0U);
  EXPECT_EQ(starts.length(7), 0U);
}

}  // namespace
}  // namespace warden::core
