#include "gateway/console/assets.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>

#include "gateway/console/embedded.hpp"

namespace warden::gateway::console {

namespace http = boost::beast::http;

namespace {

// Revalidate on every load: the console is small and on the same host, and a new binary must never be
// shown with an old script.
constexpr std::string_view kCacheControl = "no-cache";

// The pages only load their own files and call the same origin's API; uPlot sets inline styles.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

std::string_view strip_query(std::string_view target) {
  const auto end = target.find_first_of("?#");
  return end == std::string_view::npos ? target : target.substr(0, end);
}

// True when the If-None-Match list (comma-separated, possibly weak) names this strong etag.
bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  while (!if_none_match.empty()) {
    const auto comma = if_none_match.find(',');
    auto item = if_none_match.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) {
      item.remove_prefix(1);
    }
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) {
      item.remove_suffix(1);
    }
    if (item.starts_with("W/")) {
      item.remove_prefix(2);
    }
    if (item == "*" || item == etag) {
      return true;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::optional<Asset> find_asset(std::string_view target) {
  auto path = strip_query(target);
  if (path.empty() || path == "/") {
    path = "/index.html";
  }
  for (const auto& file : detail::embedded_files()) {
    if (path == file.path) {
      return Asset{file.path, file.content_type, std::string_view{file.data, file.size}, file.etag,
                   kCacheControl};
    }
  }
  return std::nullopt;
}

std::optional<http::response<http::string_body>> serve_asset(const http::request_header<>& request) {
  const bool head = request.method() == http::verb::head;
  if (request.method() != http::verb::get && !head) {
    return std::nullopt;
  }
  const auto asset = find_asset(request.target());
  if (!asset) {
    return std::nullopt;
  }
  http::response<http::string_body> response;
  response.version(request.version());
  response.set(http::field::etag, asset->etag);
  response.set(http::field::cache_control, asset->cache_control);
  if (etag_matches(request[http::field::if_none_match], asset->etag)) {
    response.result(http::status::not_modified);
    return response;
  }
  response.result(http::status::ok);
  response.set(http::field::content_type, asset->content_type);
  response.set("x-content-type-options", "nosniff");
  response.set("content-security-policy", kContentSecurityPolicy);
  response.set("referrer-policy", "no-referrer");
  if (head) {
    response.content_length(asset->body.size());
  } else {
    response.body().assign(asset->body);
    response.prepare_payload();
  }
  return response;
}

}  // namespace warden::gateway::console
