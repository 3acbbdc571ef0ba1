#include <gtest/gtest.h>

#include <string_view>

#include "base/trim.hpp"

namespace warden::base {
namespace {

TEST(Trim, RemovesSpacesAndTabsAtBothEnds) {
  EXPECT_EQ(trim("  a b\t "), "a b");
  EXPECT_EQ(trim("\tx"), "x");
  EXPECT_EQ(trim("x \t"), "x");
  EXPECT_EQ(trim("x"), "x");
}

TEST(Trim, KeepsOtherWhitespaceByDefault) {
  EXPECT_EQ(trim(" \r\nx\n "), "\r\nx\n");
}

TEST(Trim, EmptyAndAllBlank) {
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t \t"), "");
  EXPECT_TRUE(trim(std::string_view()).empty());
}

TEST(Trim, ChosenBlanks) {
  EXPECT_EQ(trim(" \r\n data: x \r\n", " \t\r\n"), "data: x");
  EXPECT_EQ(trim("\t a \t", " "), "\t a \t");
  EXPECT_EQ(trim("  a  ", " "), "a");
  EXPECT_EQ(trim("abc", ""), "abc");
}

TEST(Trim, ReturnsAViewIntoTheInput) {
  const std::string_view s = "  core  ";
  const std::string_view t = trim(s);
  EXPECT_EQ(t.data(), s.data() + 2);
  EXPECT_EQ(t.size(), 4U);
}

}  // namespace
}  // namespace warden::base
