#include "gateway/http_util.hpp"

#include <gtest/gtest.h>

using namespace warden::gateway;
namespace http = warden::net::http;

TEST(HttpUtil, ForwardsEndToEndHeadersOnly) {
  warden::net::Request in{http::verb::post, "/v1/messages", 11};
  in.set("anthropic-version", "2023-06-01");
  in.set("anthropic-beta", "a,b");
  in.set("x-api-key", "k");
  in.set("X-Warden-Replica", "1");
  in.set("X-Warden-Session", "s");
  in.set("X-data-parallel-rank", "2");
  in.set(http::field::connection, "keep-alive, X-Secret-Hop");
  in.set("X-Secret-Hop", "1");
  in.set(http::field::host, "client-side");
  in.set(http::field::content_length, "10");
  in.set(http::field::transfer_encoding, "chunked");
  in.insert("x-repeated", "1");
  in.insert("x-repeated", "2");
  warden::net::Request out;
  copy_request_headers(in, out);
  EXPECT_EQ(out["anthropic-version"], "2023-06-01");
  EXPECT_EQ(out["anthropic-beta"], "a,b");
  EXPECT_EQ(out["x-api-key"], "k");
  for (const char* gone : {"X-Warden-Replica", "X-Warden-Session", "X-data-parallel-rank", "Connection",
                           "X-Secret-Hop", "Host", "Content-Length", "Transfer-Encoding"}) {
    EXPECT_EQ(out.find(gone), out.end()) << gone;
  }
  EXPECT_EQ(std::distance(out.equal_range("x-repeated").first, out.equal_range("x-repeated").second), 2);
}

TEST(HttpUtil, ApiKeysFromEitherHeader) {
  warden::net::Request r;
  EXPECT_TRUE(api_key_ok(r, {}));
  EXPECT_FALSE(api_key_ok(r, {"k1"}));
  r.set(http::field::authorization, "Bearer k1");
  EXPECT_TRUE(api_key_ok(r, {"k0", "k1"}));
  r.set(http::field::authorization, "Bearer k2");
  EXPECT_FALSE(api_key_ok(r, {"k1"}));
  r.erase(http::field::authorization);
  r.set("x-api-key", "k1");
  EXPECT_TRUE(api_key_ok(r, {"k1"}));
  r.set("x-api-key", "k1x");
  EXPECT_FALSE(api_key_ok(r, {"k1"}));

  warden::net::Request a;
  a.set(http::field::authorization, "bearer  tok ");
  EXPECT_TRUE(bearer_matches(a, "tok"));
  EXPECT_FALSE(bearer_matches(a, ""));  // no token configured: nothing matches
  EXPECT_FALSE(bearer_matches(a, "to"));
}

TEST(HttpUtil, PathAndConnectionTokens) {
  EXPECT_EQ(path_of("/v1/messages?beta=true"), "/v1/messages");
  EXPECT_EQ(path_of("/api/stats"), "/api/stats");
  EXPECT_EQ(connection_tokens(" Close ,X-Foo,, "), (std::vector<std::string>{"close", "x-foo"}));
}
