#include "gateway/config/origin_guard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/url/parse.hpp>
#include <cctype>

namespace warden::gateway {

namespace http = net::http;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 5 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// Host and port of a `Host` value ("[::1]:8080", "localhost", "example.com:80"); port empty when absent.
// Nullopt when it is not host[:port].
std::optional<std::pair<std::string, std::string>> split_host(std::string_view value) {
  std::string_view host = value;
  std::string_view port;
  if (value.starts_with('[')) {
    const auto close = value.find(']');
    if (close == std::string_view::npos) {
      return std::nullopt;
    }
    host = value.substr(1, close - 1);
    const std::string_view rest = value.substr(close + 1);
    if (!rest.empty() && (!rest.starts_with(':') || !all_digits(rest.substr(1)))) {
      return std::nullopt;
    }
    port = rest.empty() ? rest : rest.substr(1);
  } else if (const auto colon = value.find(':'); colon != std::string_view::npos) {
    host = value.substr(0, colon);
    port = value.substr(colon + 1);
    if (!all_digits(port)) {
      return std::nullopt;
    }
  }
  const bool bad = host.empty() || std::any_of(host.begin(), host.end(), [](unsigned char c) {
                     return c <= ' ' || c == '/' || c == '@' || c == '\\' || c == '?' || c == '#';
                   });
  if (bad) {
    return std::nullopt;
  }
  return std::pair{lower(host), std::string(port)};
}

std::string_view default_port(std::string_view scheme) {
  return scheme == "https" ? "443" : "80";
}

// An origin's parts: scheme, host (IPv6 without brackets), port (the scheme's default when absent).
struct OriginParts {
  std::string scheme;
  std::string host;
  std::string port;
};

std::optional<OriginParts> parse_origin(std::string_view origin) {
  auto u = boost::urls::parse_absolute_uri(origin);
  if (!u || !u->has_authority() || u->has_userinfo() || u->has_query() || u->has_fragment() ||
      !(u->encoded_path().empty() || u->encoded_path() == "/")) {
    return std::nullopt;
  }
  const std::string authority(u->encoded_authority());
  auto hp = split_host(authority);
  if (!hp) {
    return std::nullopt;
  }
  OriginParts p{lower(u->scheme()), std::move(hp->first), std::move(hp->second)};
  if (p.port.empty()) {
    p.port = default_port(p.scheme);
  }
  return p;
}

std::string_view header_value(const http::request_header<>& request, http::field f) {
  const auto it = request.find(f);
  return it == request.end() ? std::string_view{} : std::string_view{it->value().data(), it->value().size()};
}

// The console's own origin: the one whose host and port the request's `Host` names.
bool same_origin(const OriginParts& origin, std::string_view host_header) {
  auto hp = split_host(host_header);
  if (!hp) {
    return false;
  }
  const std::string port = hp->second.empty() ? std::string(default_port(origin.scheme)) : hp->second;
  return hp->first == origin.host && port == origin.port;
}

}  // namespace

std::string host_of(std::string_view host_header) {
  auto hp = split_host(host_header);
  return hp ? hp->first : std::string();
}

bool is_loopback_host(std::string_view host) {
  const std::string h = lower(host);
  if (h == "localhost" || h.ends_with(".localhost")) {
    return true;  // browsers resolve these to the loopback themselves (RFC 6761), never through DNS
  }
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(h, ec);
  if (ec) {
    return false;
  }
  if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, addr.to_v6()).is_loopback();
  }
  return addr.is_loopback();
}

std::optional<std::string> normalize_origin(std::string_view origin) {
  if (lower(origin) == "null") {
    return std::string("null");  // sandboxed frames and file:// pages
  }
  auto p = parse_origin(origin);
  if (!p) {
    return std::nullopt;
  }
  const bool v6 = p->host.find(':') != std::string::npos;
  std::string out = p->scheme + "://" + (v6 ? "[" + p->host + "]" : p->host);
  if (p->port != default_port(p->scheme)) {
    out += ":" + p->port;
  }
  return out;
}

OriginPolicy origin_policy(std::string_view listen_host, const std::vector<std::string>& allowed_hosts,
                           const std::vector<std::string>& allowed_origins) {
  OriginPolicy p;
  std::string_view bare = listen_host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') {
    bare = bare.substr(1, bare.size() - 2);
  }
  p.check_host = is_loopback_host(bare);
  for (const auto& h : allowed_hosts) {
    p.allowed_hosts.push_back(lower(h));
  }
  for (const auto& o : allowed_origins) {
    if (auto n = normalize_origin(o)) {
      p.allowed_origins.push_back(std::move(*n));
    }
  }
  return p;
}

std::optional<OriginRefusal> check_origin(const OriginPolicy& policy, const http::request_header<>& request) {
  const std::string_view host = header_value(request, http::field::host);
  if (policy.check_host && !host.empty()) {
    const std::string name = host_of(host);
    const bool allowed = !name.empty() && (is_loopback_host(name) ||
                                           std::find(policy.allowed_hosts.begin(), policy.allowed_hosts.end(),
                                                     name) != policy.allowed_hosts.end());
    if (!allowed) {
      return OriginRefusal{
          421,
          fmt::format("this warden listens on a loopback address and does not answer for the "
                      "host name '{}' (add it to allowed_hosts to accept it)",
                      std::string(host.substr(0, 256))),
          "misdirected_request"};
    }
  }
  const std::string_view origin = header_value(request, http::field::origin);
  if (origin.empty() && request.find(http::field::origin) == request.end()) {
    return std::nullopt;
  }
  const auto parts = parse_origin(origin);
  if (parts && same_origin(*parts, host)) {
    return std::nullopt;  // the console's own page
  }
  const auto normal = normalize_origin(origin);
  if (normal && std::find(policy.allowed_origins.begin(), policy.allowed_origins.end(), *normal) !=
                    policy.allowed_origins.end()) {
    return std::nullopt;
  }
  return OriginRefusal{403,
                       fmt::format("requests from the web origin '{}' are not allowed (add it to "
                                   "allowed_origins to accept them)",
                                   std::string(origin.substr(0, 256))),
                       "origin_not_allowed"};
}

}  // namespace warden::gateway
