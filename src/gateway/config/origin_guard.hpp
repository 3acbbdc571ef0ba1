// What a web page in a browser may ask of the warden (docs/api.md, "Browsers"). A browser lets any page
// send a `text/plain` POST to any address, and a page whose DNS name its author re-points to 127.0.0.1
// (DNS rebinding) may even read the answers. So, from the request's header alone:
//   - on a listener bound to a loopback address, `Host` must name the loopback (localhost, *.localhost,
//     127.x.y.z, [::1], any port) or one of `allowed_hosts`: else 421;
//   - a request carrying `Origin` (browsers add it to cross-origin requests and to every POST) must come
//     from the console's own origin (the same host and port as its `Host`) or one of `allowed_origins`:
//     else 403.
// Programs that are not browsers send no `Origin` and a `Host` naming the address they dialled.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/http.hpp"

namespace warden::gateway {

struct OriginPolicy {
  bool check_host = false;                   // the listener is on a loopback address
  std::vector<std::string> allowed_hosts;    // lower case, without a port
  std::vector<std::string> allowed_origins;  // lower case, "scheme://host[:port]" or "null"
};

struct OriginRefusal {
  unsigned status = 403;
  std::string message;
  std::string code;
};

/// The policy for a listener on `listen_host` (an address or a name such as "localhost").
OriginPolicy origin_policy(std::string_view listen_host, const std::vector<std::string>& allowed_hosts,
                           const std::vector<std::string>& allowed_origins);

/// Why `request` is refused, or nullopt when it may go on.
std::optional<OriginRefusal> check_origin(const OriginPolicy& policy,
                                          const net::http::request_header<>& request);

/// The host of a `Host` value without its port ("[::1]:8080" → "::1", "LocalHost:80" → "localhost");
/// empty when it is not a host[:port].
std::string host_of(std::string_view host_header);
/// True for a loopback name or address: localhost, *.localhost, 127.0.0.0/8, ::1.
bool is_loopback_host(std::string_view host);
/// An `Origin` or a configured origin in the form compared: lower case, no trailing slash, the default
/// port of its scheme left out. Nullopt when it is not "scheme://host[:port]" or "null".
std::optional<std::string> normalize_origin(std::string_view origin);

}  // namespace warden::gateway
