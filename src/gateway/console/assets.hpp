// The web console's files (HTML, CSS, JS, uPlot), embedded in the binary at build time.
// The gateway's router calls serve_asset() (or find_asset()) for any GET/HEAD it does not route itself.
#pragma once

#include <optional>
#include <string_view>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace warden::gateway::console {

struct Asset {
  std::string_view path;           // normalised URL path, e.g. "/index.html"
  std::string_view content_type;   // for the Content-Type header
  std::string_view body;           // static data: valid for the whole program
  std::string_view etag;           // quoted strong validator, changes with the content
  std::string_view cache_control;  // for the Cache-Control header
};

// The asset for a request target ("/", "/index.html", "/app.js?x=1"); "/" is index.html. Query and
// fragment are ignored. nullopt for anything that is not a console file.
std::optional<Asset> find_asset(std::string_view target);

// A complete response for a GET or HEAD of a console file: 200 with the body (none for HEAD), or 304 when
// If-None-Match matches. nullopt when the target is not a console file or the method is not GET/HEAD,
// so the caller answers 404/405 in its own way. The caller sets keep_alive() like on its other responses.
std::optional<boost::beast::http::response<boost::beast::http::string_body>> serve_asset(
    const boost::beast::http::request_header<>& request);

}  // namespace warden::gateway::console
