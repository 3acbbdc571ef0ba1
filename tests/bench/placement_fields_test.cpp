// A load tool reads where the warden placed a request from its header, or for a held stream from the
// comment lines before its first event, after any number of keep-alive events, however the bytes are cut.
#include "bench/placement_fields.hpp"

#include <gtest/gtest.h>

#include <string>

using warden::bench::PlacementComment;
using warden::bench::PlacementFields;

namespace {

const std::string kHeld =
    "event: ping\ndata: {\"type\": \"ping\"}\n\n: keep-alive\n\nevent: keepalive\ndata: "
    "{\"type\":\"keepalive\"}\n\n"
    ": x-warden-replica: 3\n: x-warden-route: new\n: x-warden-queued: 12.500\n"
    ": x-warden-expected-cached: 4096; block=16; exact\n\n"
    "event: message_start\ndata: {}\n\n";

}  // namespace

TEST(PlacementFields, ReadsTheWardensFields) {
  PlacementFields f;
  f.take("x-warden-route", "sticky");
  f.take("x-warden-replica", "2");
  f.take("x-warden-expected-cached", "32; block=16");
  EXPECT_EQ(f.route, "sticky");
  EXPECT_EQ(f.replica, 2);
  EXPECT_EQ(f.expected_cached, 32u);
  EXPECT_EQ(f.expected_block, 16u);
  f.take("x-warden-replica", "2x");
  f.take("x-warden-expected-cached", "32");
  EXPECT_EQ(f.replica, 2) << "a value that does not parse changes nothing";
  EXPECT_EQ(f.expected_cached, 32u);
  EXPECT_FALSE(f.queued);
  f.take("x-warden-queued", "93.180");
  EXPECT_EQ(f.queued, 93.18);
  f.take("x-warden-queued", "-1");
  EXPECT_EQ(f.queued, 93.18) << "a negative wait is not one";
}

TEST(PlacementComment, ReadsTheCommentAfterKeepAlivesWhateverTheCuts) {
  for (std::size_t cut = 1; cut < kHeld.size(); ++cut) {
    PlacementComment c;
    const bool early = c.feed(kHeld.substr(0, cut));
    const bool done = early || c.feed(kHeld.substr(cut));
    ASSERT_TRUE(done) << cut;
    ASSERT_TRUE(c.found()) << cut;
    EXPECT_EQ(c.fields().replica, 3) << cut;
    EXPECT_EQ(c.fields().route, "new") << cut;
    EXPECT_EQ(c.fields().expected_cached, 4096u) << cut;
    EXPECT_EQ(c.fields().queued, 12.5) << cut;
  }
}

TEST(PlacementComment, GivesUpAtTheFirstEventWithoutAComment) {
  PlacementComment c;
  EXPECT_TRUE(c.feed(": keep-alive\n\ndata: {\"choices\":[]}\n\n"));
  EXPECT_FALSE(c.found());
  EXPECT_FALSE(c.fields().route);
}

TEST(PlacementComment, KeepAlivesDoNotAccumulate) {
  PlacementComment c;
  for (int i = 0; i < 100000; ++i) {
    ASSERT_FALSE(c.feed(": keep-alive\n\n"));
  }
  EXPECT_TRUE(c.feed(": x-warden-route: sticky\n\n"));
  EXPECT_EQ(c.fields().route, "sticky");
}
