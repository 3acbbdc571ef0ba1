// The text shared with other wardens through Redis: the server's URL, key names and published loads.
#include "gateway/shared/shared_keys.hpp"
#include "gateway/config/config.hpp"

#include <gtest/gtest.h>

using namespace warden::gateway;

TEST(RedisUrl, HostPortAndDatabaseWithDefaults) {
  auto u = parse_redis_url("redis://127.0.0.1:6380/2");
  ASSERT_TRUE(u) << u.error();
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 6380);
  EXPECT_EQ(u->db, 2);
  EXPECT_TRUE(u->password.empty());
  EXPECT_EQ(u->text, "redis://127.0.0.1:6380/2");
  u = parse_redis_url(" redis://cache.internal ");
  ASSERT_TRUE(u) << u.error();
  EXPECT_EQ(u->host, "cache.internal");
  EXPECT_EQ(u->port, 6379);
  EXPECT_EQ(u->db, 0);
  u = parse_redis_url("redis://[::1]:7000/");
  ASSERT_TRUE(u) << u.error();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->text, "redis://[::1]:7000/0");
}

TEST(RedisUrl, PasswordAndUserAreKeptButNotShown) {
  auto u = parse_redis_url("redis://:s3cret@10.0.0.5:6379/1");
  ASSERT_TRUE(u) << u.error();
  EXPECT_EQ(u->user, "");
  EXPECT_EQ(u->password, "s3cret");
  EXPECT_EQ(u->text, "redis://10.0.0.5:6379/1");
  u = parse_redis_url("redis://warden:pw@host/0");
  ASSERT_TRUE(u) << u.error();
  EXPECT_EQ(u->user, "warden");
  EXPECT_EQ(u->password, "pw");
}

namespace {

// The reason of a URL parse_redis_url refuses ("" if it accepts it).
std::string why_not(std::string_view text) {
  const auto u = parse_redis_url(text);
  return u ? "" : u.error();
}

}  // namespace

TEST(RedisUrl, UnusableUrlsSayWhy) {
  EXPECT_EQ(why_not("127.0.0.1:6379"), "not an absolute URL");
  EXPECT_NE(why_not("rediss://host:6379").find("rediss"), std::string::npos);
  EXPECT_EQ(why_not("redis://host:0"), "port must be 1..65535");
  EXPECT_NE(why_not("redis://host/16").find("0 to 15"), std::string::npos);
  EXPECT_FALSE(parse_redis_url("redis://host/x"));
  EXPECT_FALSE(parse_redis_url("redis://host/0?timeout=1"));
  EXPECT_FALSE(parse_redis_url("redis:///0"));
}

TEST(SharedKeys, HomeAndLoadKeysArePrefixedPerModelWithAFixedWidthHash) {
  EXPECT_EQ(home_key("lm-warden:", "qwen", 0xabcULL), "lm-warden:home:qwen:0000000000000abc");
  EXPECT_EQ(home_key("", "m", 0xFFFFFFFFFFFFFFFFULL), "home:m:ffffffffffffffff");
  EXPECT_EQ(load_key("lm-warden:", "qwen"), "lm-warden:load:qwen");
  EXPECT_EQ(parse_home("3"), 3u);
  EXPECT_FALSE(parse_home(""));
  EXPECT_FALSE(parse_home("-1"));
  EXPECT_FALSE(parse_home("2x"));
}

TEST(SharedKeys, LoadRoundTripsAndBadTextIsRefused) {
  const std::vector<ReplicaLoad> load{{1, 2, 300}, {0, 0, 0}, {4, 5, 6'000'000'000ULL}};
  const std::string text = format_load(1'700'000'000'123, load);
  EXPECT_EQ(text, "1700000000123 1,2,300 0,0,0 4,5,6000000000");
  const auto back = parse_load(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->unix_ms, 1'700'000'000'123);
  EXPECT_EQ(back->replicas, load);
  ASSERT_TRUE(parse_load("42"));
  EXPECT_TRUE(parse_load("42")->replicas.empty());
  EXPECT_FALSE(parse_load(""));
  EXPECT_FALSE(parse_load("42 1,2"));
  EXPECT_FALSE(parse_load("42 1,2,x"));
  EXPECT_FALSE(parse_load("x 1,2,3"));
}

TEST(SharedKeys, LoadsAddUpToTheModelsReplicaCount) {
  std::vector<ReplicaLoad> sum;
  add_load(sum, {{1, 1, 10}, {2, 2, 20}, {9, 9, 90}}, 2);
  add_load(sum, {{1, 0, 5}}, 2);
  ASSERT_EQ(sum.size(), 2u);
  EXPECT_EQ(sum[0], (ReplicaLoad{2, 1, 15}));
  EXPECT_EQ(sum[1], (ReplicaLoad{2, 2, 20}));
}

TEST(SharedKeys, PlacementLockKeysTokensAndCommands) {
  EXPECT_EQ(placement_lock_key("lm-warden:", "qwen"), "lm-warden:place:qwen");
  EXPECT_EQ(placement_next_key("lm-warden:", "qwen"), "lm-warden:place-next:qwen");
  EXPECT_EQ(placement_token("host-12-ab01", 7), "host-12-ab01#7");
  const RedisCommand lock = placement_lock_command("p:", "m", 0xabcULL, "w#3", 10, "w");
  ASSERT_EQ(lock.size(), 10u);
  EXPECT_EQ(lock[0], "EVAL");
  EXPECT_EQ(lock[1], placement_lock_script);
  EXPECT_EQ(std::vector<std::string>(lock.begin() + 2, lock.end()),
            (std::vector<std::string>{"4", "p:home:m:0000000000000abc", "p:place:m", "p:place-next:m",
                                      "p:load:m", "w#3", "10", "w"}));
  EXPECT_EQ(placement_lock_command("p:", "m", 1, "w#3", 0, "w")[8], "1") << "PX is never 0";
  const RedisCommand release = placement_release_command("p:", "m", "w#3", "w");
  EXPECT_EQ(release[1], placement_release_script);
  EXPECT_EQ(std::vector<std::string>(release.begin() + 2, release.end()),
            (std::vector<std::string>{"2", "p:place:m", "p:place-next:m", "w#3", "w"}));
}

TEST(SharedKeys, ElsewhereEntriesRoundTripAndBadTextIsRefused) {
  EXPECT_EQ(turn_key("p:", "m", 0xabcULL), "p:turn:m:0000000000000abc");
  EXPECT_EQ(elsewhere_key("p:", "m", "host-1-ab01"), "p:elsewhere:m:host-1-ab01");
  const ElsewhereEntry e{0xfedcba9876543210ULL, 3, 123456};
  EXPECT_EQ(format_elsewhere(e), "fedcba9876543210 3 123456");
  EXPECT_EQ(parse_elsewhere(format_elsewhere(e)), e);
  const ElsewhereEntry unmarked{1, 0, warden::core::SessionEntry::unknown};
  EXPECT_EQ(format_elsewhere(unmarked), "0000000000000001 0 -");
  EXPECT_EQ(parse_elsewhere("0000000000000001 0 -"), unmarked);
  for (const char* bad : {"", "abc 1 2", "000000000000000g 1 2", "0000000000000001 x 2", "0000000000000001 1",
                          "0000000000000001 1 2 3", "0000000000000001 70000 2", "0000000000000001 1 -5"}) {
    EXPECT_FALSE(parse_elsewhere(bad)) << bad;
  }
  const RedisCommand k = keep_alive_command("p:", "m", e, 600000, "w", 60000);
  ASSERT_EQ(k.size(), 11u);
  EXPECT_EQ(k[1], keep_alive_script);
  EXPECT_EQ(
      std::vector<std::string>(k.begin() + 2, k.end()),
      (std::vector<std::string>{"2", "p:home:m:fedcba9876543210", "p:turn:m:fedcba9876543210", "3", "600000",
                                "w", "fedcba9876543210 3 123456", "p:elsewhere:m:", "60000"}));
}
