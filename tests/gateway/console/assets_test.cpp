// The embedded console files: lookup, and the responses serve_asset() builds for the gateway's router.
#include "gateway/console/assets.hpp"

#include <gtest/gtest.h>

#include <boost/beast/http.hpp>
#include <string>

namespace warden::gateway::console {
namespace {

namespace http = boost::beast::http;

http::request<http::string_body> get(std::string target, http::verb verb = http::verb::get) {
  http::request<http::string_body> req{verb, target, 11};
  return req;
}

TEST(ConsoleAssets, RootIsIndexHtml) {
  const auto root = find_asset("/");
  const auto index = find_asset("/index.html");
  ASSERT_TRUE(root && index);
  EXPECT_EQ(root->body.data(), index->body.data());
  EXPECT_EQ(root->content_type, "text/html; charset=utf-8");
  EXPECT_NE(root->body.find("<script type=\"module\" src=\"/js/main.js\">"), std::string_view::npos);
  EXPECT_TRUE(find_asset(""));
}

TEST(ConsoleAssets, EveryFileTheIndexLoadsIsEmbedded) {
  for (const char* path : {"/app.css", "/favicon.svg", "/js/main.js", "/js/present.js", "/js/pages/stats.js",
                           "/vendor/uPlot.iife.min.js", "/vendor/uPlot.min.css"}) {
    const auto a = find_asset(path);
    ASSERT_TRUE(a) << path;
    EXPECT_FALSE(a->body.empty()) << path;
    EXPECT_EQ(a->etag.front(), '"') << path;
    EXPECT_EQ(a->etag.back(), '"') << path;
  }
  EXPECT_EQ(find_asset("/js/main.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(find_asset("/app.css")->content_type, "text/css; charset=utf-8");
  EXPECT_EQ(find_asset("/favicon.svg")->content_type, "image/svg+xml");
}

TEST(ConsoleAssets, QueryAndFragmentAreIgnored) {
  const auto a = find_asset("/js/main.js?v=3#x");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->path, "/js/main.js");
  EXPECT_TRUE(find_asset("/?x=1"));
}

TEST(ConsoleAssets, UnknownAndTraversalPathsAreNotAssets) {
  for (const char* path : {"/nope.js", "/js/", "/../CMakeLists.txt", "/js/../index.html", "index.html",
                           "/INDEX.HTML", "/api/models", "/v1/chat/completions", "/vendor/uPlot.esm.js"}) {
    EXPECT_FALSE(find_asset(path)) << path;
  }
}

TEST(ConsoleAssets, ServeGetsBodyTypeAndValidators) {
  auto res = serve_asset(get("/"));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  EXPECT_EQ((*res)[http::field::content_type], "text/html; charset=utf-8");
  EXPECT_EQ((*res)[http::field::cache_control], "no-cache");
  EXPECT_EQ((*res)["x-content-type-options"], "nosniff");
  EXPECT_NE((*res)["content-security-policy"].find("default-src 'self'"), std::string_view::npos);
  EXPECT_EQ(res->body(), find_asset("/")->body);
  EXPECT_EQ((*res)[http::field::content_length], std::to_string(res->body().size()));
}

TEST(ConsoleAssets, MatchingIfNoneMatchGives304WithoutBody) {
  const auto etag = std::string(find_asset("/app.css")->etag);
  for (const std::string& header : {etag, "\"other\", " + etag, "W/" + etag, std::string("*")}) {
    auto req = get("/app.css");
    req.set(http::field::if_none_match, header);
    auto res = serve_asset(req);
    ASSERT_TRUE(res) << header;
    EXPECT_EQ(res->result(), http::status::not_modified) << header;
    EXPECT_TRUE(res->body().empty());
    EXPECT_EQ((*res)[http::field::etag], etag);
  }
  auto req = get("/app.css");
  req.set(http::field::if_none_match, "\"stale\"");
  EXPECT_EQ(serve_asset(req)->result(), http::status::ok);
}

TEST(ConsoleAssets, HeadHasLengthButNoBody) {
  auto res = serve_asset(get("/js/main.js", http::verb::head));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result(), http::status::ok);
  EXPECT_TRUE(res->body().empty());
  EXPECT_EQ((*res)[http::field::content_length], std::to_string(find_asset("/js/main.js")->body.size()));
}

TEST(ConsoleAssets, OtherMethodsAndPathsAreLeftToTheRouter) {
  EXPECT_FALSE(serve_asset(get("/", http::verb::post)));
  EXPECT_FALSE(serve_asset(get("/", http::verb::patch)));
  EXPECT_FALSE(serve_asset(get("/api/stats")));
}

}  // namespace
}  // namespace warden::gateway::console
