#include "gateway/proxy/http_util.hpp"

#include <algorithm>
#include <array>
#include <boost/beast/core/string.hpp>

#include "base/trim.hpp"

namespace warden::gateway {

using base::trim;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return boost::beast::iequals(a, b);
}

// Constant time: every byte of the offered value `a` is compared (against the secret repeated), and a
// length mismatch does not return early, so neither a key nor its length shows in response times.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const unsigned char s = b.empty() ? 0 : static_cast<unsigned char>(b[i % b.size()]);
    diff |= static_cast<unsigned char>(static_cast<unsigned char>(a[i]) ^ s);
  }
  return diff == 0 && !b.empty() && a.size() == b.size();
}

std::string_view bearer_of(const net::http::request_header<>& req) {
  auto it = req.find(net::http::field::authorization);
  if (it == req.end()) {
    return {};
  }
  std::string_view v = trim(it->value());
  if (v.size() > 7 && iequals(v.substr(0, 7), "bearer ")) {
    return trim(v.substr(7));
  }
  return {};
}

// Calls fn(name, value) for every header that crosses the proxy.
template <class From, class Fn>
void for_each_forwarded(const From& from, bool request, Fn&& fn) {
  std::vector<std::string> listed;
  for (auto it = from.find(net::http::field::connection);
       it != from.end() && iequals(it->name_string(), "connection"); ++it) {
    auto t = connection_tokens(it->value());
    listed.insert(listed.end(), t.begin(), t.end());
  }
  for (const auto& f : from) {
    const std::string_view name = f.name_string();
    // Beast knows the standard names by their enum: the string compares only for the others.
    const bool known = f.name() != net::http::field::unknown;
    if (known ? is_hop_by_hop(f.name()) : (request && is_warden_request_header(name))) {
      continue;
    }
    if (std::any_of(listed.begin(), listed.end(), [&](const std::string& l) { return iequals(l, name); })) {
      continue;
    }
    fn(name, f.value());
  }
}

template <class From, class To>
void copy_filtered(const From& from, To& to, bool request) {
  for_each_forwarded(from, request,
                     [&](std::string_view name, std::string_view value) { to.insert(name, value); });
}

}  // namespace

bool is_hop_by_hop(std::string_view name) {
  // Expect is answered by the warden's own server (100 Continue); an engine's interim answer to it would
  // only confuse the relay.
  static constexpr std::array<std::string_view, 12> kNames{"connection",
                                                           "keep-alive",
                                                           "proxy-connection",
                                                           "proxy-authenticate",
                                                           "proxy-authorization",
                                                           "te",
                                                           "trailer",
                                                           "transfer-encoding",
                                                           "upgrade",
                                                           "host",
                                                           "content-length",
                                                           "expect"};
  return std::any_of(kNames.begin(), kNames.end(), [&](std::string_view n) { return iequals(n, name); });
}

bool is_hop_by_hop(net::http::field f) {
  using net::http::field;
  switch (f) {
    case field::connection:
    case field::keep_alive:
    case field::proxy_connection:
    case field::proxy_authenticate:
    case field::proxy_authorization:
    case field::te:
    case field::trailer:
    case field::transfer_encoding:
    case field::upgrade:
    case field::host:
    case field::content_length:
    case field::expect:
      return true;
    default:
      return false;
  }
}

bool is_warden_request_header(std::string_view name) {
  // X-data-parallel-rank is a client pin as far as the warden is concerned; in DP mode it sets its own.
  return iequals(name, "x-warden-replica") || iequals(name, "x-warden-session") ||
         iequals(name, "x-data-parallel-rank");
}

std::vector<std::string> connection_tokens(std::string_view value) {
  std::vector<std::string> out;
  while (!value.empty()) {
    auto comma = value.find(',');
    std::string_view tok = trim(value.substr(0, comma));
    if (!tok.empty()) {
      std::string t(tok);
      std::transform(t.begin(), t.end(), t.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      out.push_back(std::move(t));
    }
    if (comma == std::string_view::npos) {
      break;
    }
    value.remove_prefix(comma + 1);
  }
  return out;
}

void append_request_headers(const net::Request& from, std::string& out, bool drop_session_id) {
  for_each_forwarded(from, true, [&](std::string_view name, std::string_view value) {
    if (!drop_session_id || !iequals(name, "x-session-id")) {
      out.append(name).append(": ").append(value).append("\r\n");
    }
  });
}

void copy_response_headers(const net::http::response_header<>& from, net::http::response_header<>& to) {
  copy_filtered(from, to, false);
}

bool api_key_ok(const net::http::request_header<>& req, const std::vector<std::string>& keys) {
  if (keys.empty()) {
    return true;
  }
  std::string_view offered = bearer_of(req);
  if (offered.empty()) {
    auto it = req.find("x-api-key");
    if (it != req.end()) {
      offered = trim(it->value());
    }
  }
  if (offered.empty()) {
    return false;
  }
  bool ok = false;
  for (const auto& k : keys) {
    ok = same_secret(offered, k) || ok;
  }
  return ok;
}

bool bearer_matches(const net::Request& req, std::string_view token) {
  if (token.empty()) {
    return false;
  }
  std::string_view offered = bearer_of(req);
  return !offered.empty() && same_secret(offered, token);
}

std::string_view path_of(std::string_view target) {
  auto q = target.find_first_of("?#");
  return q == std::string_view::npos ? target : target.substr(0, q);
}

}  // namespace warden::gateway
