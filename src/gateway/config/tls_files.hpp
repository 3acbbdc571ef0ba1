// The TLS files a configuration names (`tls:`, `upstream_tls:`), read and checked: by check-config, at the
// start and at every reload, so a renewed certificate is taken without a restart and a broken one refuses
// the reload whole. Kept out of config.cpp, whose parsing does no I/O.
#pragma once

#include <vector>

#include "base/result.hpp"
#include "gateway/config/config.hpp"

namespace warden::gateway {

// Loads the listener's certificate and key (when `tls:` is set) and the upstreams' CA and client
// certificate (when a replica is https:// or `upstream_tls:` is set) into the contexts of `config`.
// Fails with one "FILE:LINE:COL: ..." error per unusable file or pair (unreadable, not PEM, key not
// matching its certificate).
base::Result<void, std::vector<ConfigError>> load_tls_files(Config& config);

}  // namespace warden::gateway
