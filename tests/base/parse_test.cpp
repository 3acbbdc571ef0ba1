// Whole-text parsing of integers, durations and sizes: what is accepted, the bounds, and what is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>

#include "base/parse.hpp"

namespace warden::base {
namespace {

using std::chrono::milliseconds;

TEST(ParseInteger, WholeTextOnly) {
  EXPECT_EQ(parse_integer<int>("42"), 42);
  EXPECT_EQ(parse_integer<int>("-7"), -7);
  EXPECT_EQ(parse_integer<int>("0"), 0);
  EXPECT_FALSE(parse_integer<int>(""));
  EXPECT_FALSE(parse_integer<int>("4x"));
  EXPECT_FALSE(parse_integer<int>("x4"));
  EXPECT_FALSE(parse_integer<int>(" 4"));
  EXPECT_FALSE(parse_integer<int>("4 "));
  EXPECT_FALSE(parse_integer<int>("+4"));
  EXPECT_FALSE(parse_integer<int>("1.5"));
  EXPECT_FALSE(parse_integer<int>("-"));
}

TEST(ParseInteger, OverflowIsRefused) {
  EXPECT_EQ(parse_integer<long long>("9223372036854775807"), std::numeric_limits<long long>::max());
  EXPECT_EQ(parse_integer<long long>("-9223372036854775808"), std::numeric_limits<long long>::min());
  EXPECT_FALSE(parse_integer<long long>("9223372036854775808"));
  EXPECT_FALSE(parse_integer<long long>("-9223372036854775809"));
  EXPECT_EQ(parse_integer<std::uint32_t>("4294967295"), 4294967295U);
  EXPECT_FALSE(parse_integer<std::uint32_t>("4294967296"));
  EXPECT_FALSE(parse_integer<std::uint32_t>("99999999999999999999999"));
}

TEST(ParseInteger, UnsignedRefusesSigns) {
  EXPECT_FALSE(parse_integer<unsigned>("-1"));
  EXPECT_FALSE(parse_integer<unsigned>("-0"));
}

TEST(ParseInteger, BoundsAreInclusive) {
  EXPECT_EQ(parse_integer<int>("1", 1, 10000), 1);
  EXPECT_EQ(parse_integer<int>("10000", 1, 10000), 10000);
  EXPECT_FALSE(parse_integer<int>("0", 1, 10000));
  EXPECT_FALSE(parse_integer<int>("10001", 1, 10000));
  EXPECT_FALSE(parse_integer<int>("-5", 1, 10000));
  EXPECT_EQ(parse_integer<unsigned>("65535", 0U, 65535U), 65535U);
  EXPECT_FALSE(parse_integer<unsigned>("65536", 0U, 65535U));
  EXPECT_FALSE(parse_integer<int>("", 0, 10));
  EXPECT_FALSE(parse_integer<int>("99999999999", 0, 10));
}

TEST(ParseDuration, Units) {
  EXPECT_EQ(parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_duration("1s"), milliseconds(1000));
  EXPECT_EQ(parse_duration("1.5s"), milliseconds(1500));
  EXPECT_EQ(parse_duration("2m"), milliseconds(120'000));
  EXPECT_EQ(parse_duration("2min"), milliseconds(120'000));
  EXPECT_EQ(parse_duration("1h"), milliseconds(3'600'000));
  EXPECT_EQ(parse_duration("3"), milliseconds(3000));
  EXPECT_EQ(parse_duration("0"), milliseconds(0));
  EXPECT_EQ(parse_duration(".5s"), milliseconds(500));
}

TEST(ParseDuration, BlanksAroundNumberAndUnit) {
  EXPECT_EQ(parse_duration("  10 s\t"), milliseconds(10'000));
  EXPECT_EQ(parse_duration("\t500\tms "), milliseconds(500));
  EXPECT_FALSE(parse_duration(""));
  EXPECT_FALSE(parse_duration("   "));
  EXPECT_FALSE(parse_duration("\n1s"));
}

TEST(ParseDuration, TruncatesToWholeMilliseconds) {
  EXPECT_EQ(parse_duration("1.9ms"), milliseconds(1));
  EXPECT_EQ(parse_duration("0.0001s"), milliseconds(0));
}

TEST(ParseDuration, Refuses) {
  EXPECT_FALSE(parse_duration("soon"));
  EXPECT_FALSE(parse_duration("1 fortnight"));
  EXPECT_FALSE(parse_duration("-1s"));
  EXPECT_FALSE(parse_duration("+1s"));
  EXPECT_FALSE(parse_duration("1e3s"));
  EXPECT_FALSE(parse_duration("1.2.3s"));
  EXPECT_FALSE(parse_duration("1S"));
  EXPECT_FALSE(parse_duration("ms"));
  EXPECT_FALSE(parse_duration("1ms s"));
}

TEST(ParseDuration, UpperBound) {
  EXPECT_EQ(parse_duration("1000000000000000ms"), milliseconds(1'000'000'000'000'000));
  EXPECT_FALSE(parse_duration("1000000000000001ms"));
  EXPECT_FALSE(parse_duration("300000000h"));
  EXPECT_FALSE(parse_duration("99999999999999999999999999"));
}

TEST(ParseSeconds, Units) {
  EXPECT_EQ(parse_seconds("180"), 180.0);
  EXPECT_EQ(parse_seconds("90s"), 90.0);
  EXPECT_EQ(parse_seconds("3m"), 180.0);
  EXPECT_EQ(parse_seconds("500ms"), 0.5);
  EXPECT_EQ(parse_seconds("1.5h"), 5400.0);
  EXPECT_EQ(parse_seconds("0"), 0.0);
  EXPECT_EQ(parse_seconds("1e2s"), 100.0);
}

TEST(ParseSeconds, Refuses) {
  EXPECT_FALSE(parse_seconds(""));
  EXPECT_FALSE(parse_seconds("s"));
  EXPECT_FALSE(parse_seconds("ms"));
  EXPECT_FALSE(parse_seconds("-3m"));
  EXPECT_FALSE(parse_seconds("abc"));
  EXPECT_FALSE(parse_seconds(" 3m"));
  EXPECT_FALSE(parse_seconds("3 m"));
  EXPECT_FALSE(parse_seconds("3min"));
  EXPECT_FALSE(parse_seconds("inf"));
  EXPECT_FALSE(parse_seconds("nan"));
  EXPECT_FALSE(parse_seconds("1e999"));
}

TEST(ParseSeconds, SplitsTheLongestUnit) {
  EXPECT_EQ(split_seconds_unit("100ms"), (std::pair<std::string_view, double>{"100", 0.001}));
  EXPECT_EQ(split_seconds_unit("2m"), (std::pair<std::string_view, double>{"2", 60.0}));
  EXPECT_EQ(split_seconds_unit("45"), (std::pair<std::string_view, double>{"45", 1.0}));
  EXPECT_EQ(split_seconds_unit(""), (std::pair<std::string_view, double>{"", 1.0}));
}

TEST(ParseSize, Units) {
  EXPECT_EQ(parse_size("1000"), 1000U);
  EXPECT_EQ(parse_size("1000B"), 1000U);
  EXPECT_EQ(parse_size("512KiB"), 512U * 1024);
  EXPECT_EQ(parse_size("32MiB"), 32U * 1024 * 1024);
  EXPECT_EQ(parse_size("1GiB"), 1024ULL * 1024 * 1024);
  EXPECT_EQ(parse_size("10KB"), 10'000U);
  EXPECT_EQ(parse_size("10kB"), 10'000U);
  EXPECT_EQ(parse_size("10MB"), 10'000'000U);
  EXPECT_EQ(parse_size("2GB"), 2'000'000'000U);
  EXPECT_EQ(parse_size("1.5KiB"), 1536U);
  EXPECT_EQ(parse_size(" 4 MiB "), 4U * 1024 * 1024);
}

TEST(ParseSize, Bounds) {
  EXPECT_EQ(parse_size("1"), 1U);
  EXPECT_FALSE(parse_size("0"));
  EXPECT_FALSE(parse_size("0.5"));
  EXPECT_EQ(parse_size("1000000000000000"), 1'000'000'000'000'000U);
  EXPECT_FALSE(parse_size("1000000000000001"));
  EXPECT_FALSE(parse_size("1000000GiB"));
}

TEST(ParseSize, Refuses) {
  EXPECT_FALSE(parse_size(""));
  EXPECT_FALSE(parse_size("MiB"));
  EXPECT_FALSE(parse_size("-1"));
  EXPECT_FALSE(parse_size("1mib"));
  EXPECT_FALSE(parse_size("1KIB"));
  EXPECT_FALSE(parse_size("1TB"));
  EXPECT_FALSE(parse_size("1e3"));
}

}  // namespace
}  // namespace warden::base
