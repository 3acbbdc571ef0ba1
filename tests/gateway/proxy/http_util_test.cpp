#include "gateway/proxy/http_util.hpp"

#include <gtest/gtest.h>

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>

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
  in.set(http::field::expect, "100-continue");  // answered by the warden itself, never by the engine
  in.insert("x-repeated", "1");
  in.insert("x-repeated", "2");
  std::string lines;
  append_request_headers(in, lines);
  // The lines must make a valid header block: parse them back.
  const std::string block = "POST /v1/messages HTTP/1.1\r\n" + lines + "\r\n";
  http::request_parser<http::empty_body> parser;
  boost::system::error_code ec;
  parser.put(boost::asio::buffer(block), ec);
  ASSERT_FALSE(ec) << ec.message() << "\n" << block;
  ASSERT_TRUE(parser.is_header_done());
  const auto& out = parser.get();
  EXPECT_EQ(out["anthropic-version"], "2023-06-01");
  EXPECT_EQ(out["anthropic-beta"], "a,b");
  EXPECT_EQ(out["x-api-key"], "k");
  for (const char* gone : {"X-Warden-Replica", "X-Warden-Session", "X-data-parallel-rank", "Connection",
                           "X-Secret-Hop", "Host", "Content-Length", "Transfer-Encoding", "Expect"}) {
    EXPECT_EQ(out.find(gone), out.end()) << gone;
  }
  EXPECT_EQ(std::distance(out.equal_range("x-repeated").first, out.equal_range("x-repeated").second), 2);
}

TEST(HttpUtil, HopByHopByNameAndByBeastsEnumAgree) {
  // The relay checks a known header by its enum; every hop-by-hop name must be known to Beast, or the
  // enum check would let it through.
  for (const char* name :
       {"Connection", "keep-alive", "Proxy-Connection", "proxy-authenticate", "Proxy-Authorization", "TE",
        "trailer", "Transfer-Encoding", "upgrade", "HOST", "content-length", "Expect"}) {
    const http::field f = http::string_to_field(name);
    ASSERT_NE(f, http::field::unknown) << name;
    EXPECT_TRUE(is_hop_by_hop(name)) << name;
    EXPECT_TRUE(is_hop_by_hop(f)) << name;
  }
  for (const char* name : {"content-type", "authorization", "accept", "user-agent", "x-api-key"}) {
    EXPECT_FALSE(is_hop_by_hop(name)) << name;
    EXPECT_FALSE(is_hop_by_hop(http::string_to_field(name))) << name;
  }
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
