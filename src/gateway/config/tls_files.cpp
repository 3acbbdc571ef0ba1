#include "gateway/config/tls_files.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "net/tls.hpp"

namespace warden::gateway {

namespace {

bool any_https(const Config& config) {
  return std::any_of(config.models.begin(), config.models.end(), [](const ModelConfig& m) {
    return m.data_parallel
               ? m.dp_url.tls
               : std::any_of(m.urls.begin(), m.urls.end(), [](const UpstreamUrl& u) { return u.tls; });
  });
}

}  // namespace

base::Result<void, std::vector<ConfigError>> load_tls_files(Config& config) {
  std::vector<ConfigError> errors;
  if (config.tls) {
    auto made = net::make_server_tls({config.tls->cert_file, config.tls->key_file});
    if (made) {
      config.tls->context = std::move(*made);
    } else {
      errors.push_back({fmt::format("{}: tls: {}", config.tls->at, made.error())});
    }
  }
  UpstreamTlsConfig& up = config.upstream_tls;
  if (any_https(config) || !up.at.empty()) {
    auto made = net::make_client_tls({up.ca_file, up.cert_file, up.key_file});
    if (made) {
      up.context = std::move(*made);
    } else {
      errors.push_back(
          {fmt::format("{}: upstream_tls: {}", up.at.empty() ? config.source : up.at, made.error())});
    }
  }
  if (!errors.empty()) {
    return {boost::system::in_place_error, std::move(errors)};
  }
  return {};
}

}  // namespace warden::gateway
