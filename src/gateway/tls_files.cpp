#include "gateway/tls_files.hpp"

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

bool load_tls_files(Config& config, std::vector<ConfigError>& errors) {
  const std::size_t before = errors.size();
  std::string why;
  if (config.tls) {
    config.tls->context = net::make_server_tls({config.tls->cert_file, config.tls->key_file}, &why);
    if (!config.tls->context) {
      errors.push_back({fmt::format("{}: tls: {}", config.tls->at, why)});
    }
  }
  UpstreamTlsConfig& up = config.upstream_tls;
  if (any_https(config) || !up.at.empty()) {
    up.context = net::make_client_tls({up.ca_file, up.cert_file, up.key_file}, &why);
    if (!up.context) {
      errors.push_back({fmt::format("{}: upstream_tls: {}", up.at.empty() ? config.source : up.at, why)});
    }
  }
  return errors.size() == before;
}

}  // namespace warden::gateway
