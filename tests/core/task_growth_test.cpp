// What a task under way is still expected to add to its context, from the growth of the tasks that ended.
#include "core/task_growth.hpp"

#include <gtest/gtest.h>

namespace warden::core {
namespace {

TEST(TaskGrowth, NothingIsKnownBeforeATaskEnded) {
  const TaskGrowth growth;
  EXPECT_FALSE(growth.known());
  EXPECT_DOUBLE_EQ(growth.mean(), 0);
  EXPECT_DOUBLE_EQ(growth.left(0), 0);
}

TEST(TaskGrowth, ATaskIsExpectedToAddWhatTheTasksThatGrewFurtherWentOnToAdd) {
  TaskGrowth growth;
  for (const std::uint64_t tokens : {30'000, 10'000, 20'000}) {
    growth.ended(tokens);
  }
  EXPECT_TRUE(growth.known());
  EXPECT_DOUBLE_EQ(growth.mean(), 20'000);
  EXPECT_DOUBLE_EQ(growth.left(0), 20'000) << "a task just started: a task's mean";
  EXPECT_DOUBLE_EQ(growth.left(15'000), 10'000) << "of the 20k and 30k tasks: 25k on average, 15k done";
  EXPECT_DOUBLE_EQ(growth.left(20'000), 10'000) << "only the 30k task grew further than 20k";
  EXPECT_DOUBLE_EQ(growth.left(30'000), 0) << "no ended task grew further";
  EXPECT_DOUBLE_EQ(growth.left(-5'000), 20'000) << "a compacted context: as if just started";
}

// Tasks of a length nobody can foresee (the last tool round is any round) keep adding about a mean task
// whatever they grew; the residual of tasks of one length shrinks as they go.
TEST(TaskGrowth, LengthsNobodyForeseesKeepAddingAboutAMeanTask) {
  TaskGrowth memoryless;
  for (const std::uint64_t tokens : {10'000, 20'000, 30'000, 40'000, 50'000, 60'000, 70'000, 80'000}) {
    memoryless.ended(tokens);
  }
  EXPECT_DOUBLE_EQ(memoryless.left(35'000), 25'000);  // (40 + 50 + 60 + 70 + 80) / 5 - 35
  TaskGrowth fixed;
  for (int i = 0; i < 8; ++i) {
    fixed.ended(40'000);
  }
  EXPECT_DOUBLE_EQ(fixed.left(35'000), 5'000);
}

TEST(TaskGrowth, OnlyTheLastWindowOfTasksWeighsIn) {
  TaskGrowth growth;
  growth.ended(1'000'000);
  for (std::size_t i = 0; i < TaskGrowth::window; ++i) {
    growth.ended(10'000);
  }
  EXPECT_DOUBLE_EQ(growth.mean(), 10'000) << "the oldest one left the window";
  EXPECT_DOUBLE_EQ(growth.left(10'000), 0);
  growth.clear();
  EXPECT_FALSE(growth.known());
}

}  // namespace
}  // namespace warden::core
