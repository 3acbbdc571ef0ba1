// The YAML config loader of `serve`: any text is either a config or a list of errors that name the
// source, never a crash or an exception; an accepted config has models with unique names and at least
// one replica each. Input: the YAML text.

#include "fuzz/fuzz_support.hpp"
#include "gateway/config/config.hpp"

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const warden::gateway::ConfigResult r = warden::gateway::parse_config(text, "fuzz.yaml");
  FUZZ_CHECK(r.ok() == r.errors.empty());
  for (const auto& e : r.errors) {
    FUZZ_CHECK(e.message.starts_with("fuzz.yaml"));
  }
  if (!r.ok()) {
    FUZZ_CHECK(!r.error_text().empty());
    return 0;
  }
  const warden::gateway::Config& c = *r.config;
  FUZZ_CHECK(!c.models.empty());
  std::set<std::string> names;
  for (const auto& m : c.models) {
    FUZZ_CHECK(!m.name.empty() && names.insert(m.name).second);
    FUZZ_CHECK(c.find_model(m.name) == &m);
    FUZZ_CHECK(m.replica_count() >= 1);
    for (int i = 0; i < m.replica_count(); ++i) {
      FUZZ_CHECK(m.replica_url(i).port != 0);
    }
  }
  return 0;
}
