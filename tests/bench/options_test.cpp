// `lm-warden bench`'s options: their textual forms, cross-checks, and what follows from them (metrics
// URLs, the target of each turn, the stayed-on-replica measure).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "bench/options.hpp"

namespace warden::bench {
namespace {

TEST(BenchOptions, ParsesDurationsLevelsCompareAndApi) {
  EXPECT_EQ(*parse_duration("3m"), 180.0);
  EXPECT_EQ(*parse_duration("90s"), 90.0);
  EXPECT_EQ(*parse_duration("45"), 45.0);
  EXPECT_EQ(*parse_duration("500ms"), 0.5);
  EXPECT_EQ(*parse_duration("1.5h"), 5400.0);
  EXPECT_FALSE(parse_duration("0s").has_value());
  EXPECT_FALSE(parse_duration("abc").has_value());
  EXPECT_FALSE(parse_duration("-3m").has_value());
  EXPECT_EQ(*parse_levels("4,8, 16"), (std::vector<int>{4, 8, 16}));
  EXPECT_FALSE(parse_levels("4,,8").has_value());
  EXPECT_FALSE(parse_levels("0").has_value());
  EXPECT_FALSE(parse_levels("4x").has_value());
  EXPECT_EQ(*parse_compare("off,on"), (std::vector<std::string>{"off", "on"}));
  EXPECT_EQ(*parse_compare("on,off"), (std::vector<std::string>{"on", "off"}));
  EXPECT_FALSE(parse_compare("off").has_value());
  EXPECT_FALSE(parse_compare("off,off").has_value());
  EXPECT_FALSE(parse_compare("a,b").has_value());
  EXPECT_EQ(*parse_api("openai"), Api::openai);
  EXPECT_FALSE(parse_api("grpc").has_value());
}

TEST(BenchOptions, ValidationAndDerivedUrls) {
  BenchOptions o;
  o.urls = {"http://127.0.0.1:8000/"};
  o.model = "m";
  EXPECT_TRUE(validate(o).has_value());
  EXPECT_EQ(metrics_urls(o), (std::vector<std::string>{"http://127.0.0.1:8000/metrics"}));
  o.compare = {"off", "on"};
  EXPECT_FALSE(validate(o).has_value());  // compare needs a warden
  o.wardens = {"http://127.0.0.1:9000"};
  EXPECT_TRUE(validate(o).has_value());
  o.out = "table.txt";
  EXPECT_FALSE(validate(o).has_value());
  o.out = "table.md";
  o.time_scale = 0;
  EXPECT_FALSE(validate(o).has_value());
  EXPECT_EQ(routing_admin_path("Qwen/Qwen3-4B"), "/api/models/Qwen%2FQwen3-4B/routing");
  EXPECT_EQ(routing_admin_path("qwen3-4b-dp4"), "/api/models/qwen3-4b-dp4/routing");
}

TEST(BenchOptions, UrlsRepeatedOrCommaSeparated) {
  EXPECT_EQ(*parse_urls({"http://a:1, http://b:2", "http://c:3/"}, "--url"),
            (std::vector<std::string>{"http://a:1", "http://b:2", "http://c:3/"}));
  EXPECT_EQ(*parse_urls({"http://a:1"}, "--url"), (std::vector<std::string>{"http://a:1"}));
  EXPECT_TRUE(parse_urls({}, "--warden")->empty());
  const auto empty = parse_urls({"http://a:1,"}, "--url");
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().find("--url"), std::string::npos) << empty.error();
  // The same warden twice is a mistake (its share of the turns would double), trailing slash or not.
  const auto twice = parse_urls({"http://a:1/", "http://a:1"}, "--url");
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.error().find("twice"), std::string::npos) << twice.error();
  EXPECT_EQ(*parse_stayed_by("replica"), StayedBy::replica);
  EXPECT_EQ(*parse_stayed_by("route"), StayedBy::route);
  EXPECT_FALSE(parse_stayed_by("sticky").has_value());
}

TEST(BenchOptions, SeveralTargetsMetricsCompareAndStayedMeasure) {
  BenchOptions o;
  o.urls = {"http://127.0.0.1:8080", "http://127.0.0.1:8081/"};
  o.model = "m";
  EXPECT_TRUE(validate(o).has_value());
  // Without --metrics every target's /metrics is read and summed.
  EXPECT_EQ(metrics_urls(o),
            (std::vector<std::string>{"http://127.0.0.1:8080/metrics", "http://127.0.0.1:8081/metrics"}));
  o.metrics = {"http://127.0.0.1:8000/metrics"};
  EXPECT_EQ(metrics_urls(o), o.metrics);
  // Several wardens: the route one reports says what that warden knows; the replica is compared instead.
  EXPECT_EQ(stayed_by_for(o), StayedBy::replica);
  o.stayed_by = StayedBy::route;
  EXPECT_EQ(stayed_by_for(o), StayedBy::route);
  o.stayed_by.reset();
  o.urls.pop_back();
  EXPECT_EQ(stayed_by_for(o), StayedBy::route);
  // --compare over several targets sets affinity on each warden.
  o.urls = {"http://127.0.0.1:8080", "http://127.0.0.1:8081"};
  o.compare = {"off", "on"};
  o.wardens = {"http://127.0.0.1:8080"};
  EXPECT_FALSE(validate(o).has_value());
  o.wardens = o.urls;
  EXPECT_TRUE(validate(o).has_value());
  // A baseline is printed beside one pass, and is a JSON report.
  o.baseline = "one.json";
  EXPECT_FALSE(validate(o).has_value());
  o.compare.clear();
  EXPECT_TRUE(validate(o).has_value());
  o.baseline = "one.md";
  EXPECT_FALSE(validate(o).has_value());
}

TEST(BenchTargets, ConsecutiveTurnsOfASessionRotateOverTheTargets) {
  for (std::size_t targets : {2U, 3U}) {
    SCOPED_TRACE(targets);
    for (std::uint64_t session = 0; session < 10; ++session) {
      std::map<std::size_t, int> per_target;
      for (std::size_t turn = 0; turn < 6; ++turn) {
        const std::size_t t = target_for(session, turn, targets);
        ASSERT_LT(t, targets);
        ++per_target[t];
        if (turn > 0) {
          EXPECT_EQ(t, (target_for(session, turn - 1, targets) + 1) % targets);
        }
      }
      // Six turns over two or three targets: each target gets the same share of the conversation.
      for (const auto& [target, count] : per_target) {
        EXPECT_EQ(count, static_cast<int>(6 / targets)) << "target " << target;
      }
    }
  }
  // At any turn, sessions started together are spread evenly (first turns too): 4 sessions, 2 each.
  for (std::size_t turn = 0; turn < 6; ++turn) {
    std::multiset<std::size_t> at_turn;
    for (std::uint64_t session = 0; session < 4; ++session) {
      at_turn.insert(target_for(session, turn, 2));
    }
    EXPECT_EQ(at_turn.count(0), 2U);
    EXPECT_EQ(at_turn.count(1), 2U);
  }
  // One target (or none configured yet): always the first.
  EXPECT_EQ(target_for(7, 3, 1), 0U);
  EXPECT_EQ(target_for(7, 3, 0), 0U);
}

}  // namespace
}  // namespace warden::bench
