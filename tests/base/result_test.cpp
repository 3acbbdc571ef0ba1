#include <gtest/gtest.h>

#include <string>

#include "base/result.hpp"

namespace warden::base {
namespace {

Result<int> half(int n) {
  if (n % 2 != 0) {
    return std::string("odd");
  }
  return n / 2;
}

TEST(Result, CarriesAValueOrAReason) {
  const auto ok = half(4);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 2);
  const auto bad = half(3);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "odd");
}

TEST(Result, VoidResults) {
  const Result<void> ok;
  EXPECT_TRUE(ok);
  const Result<void> bad = std::string("no");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "no");
}

}  // namespace
}  // namespace warden::base
