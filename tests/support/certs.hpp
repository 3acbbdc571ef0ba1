#pragma once
// Self-signed certificates made by the test itself with `openssl req -x509`, into a directory the test
// owns. Header-only so any layer's tests can `#include "support/certs.hpp"`.

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace test_support {

struct Certificate {
  std::string cert;  // PEM certificate (also the CA file that trusts it: it signs itself)
  std::string key;   // PEM private key
};

/// A P-256 key and a certificate for `names` (subjectAltName entries, e.g. "DNS:localhost,IP:127.0.0.1")
/// written as DIR/STEM.pem and DIR/STEM.key. Throws if openssl fails.
inline Certificate make_certificate(const std::filesystem::path& dir, const std::string& stem,
                                    const std::string& names = "DNS:localhost,IP:127.0.0.1") {
  Certificate c{(dir / (stem + ".pem")).string(), (dir / (stem + ".key")).string()};
  const std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
      " -subj /CN=" +
      stem + " -addext subjectAltName=" + names + " -keyout '" + c.key + "' -out '" + c.cert +
      "' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    throw std::runtime_error("openssl req failed: " + cmd);
  }
  return c;
}

}  // namespace test_support
