// `lm-warden sim --help` names every engine preset the sim accepts: the help reads engine::preset_names(),
// the one list of them.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "engine/presets.hpp"

TEST(SimHelp, NamesEveryPreset) {
  FILE* pipe = popen((std::string(WARDEN_BINARY) + " sim --help").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) {
    out += buf.data();
  }
  EXPECT_EQ(pclose(pipe), 0) << out;
  const std::size_t at = out.find("Engine preset:");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string line = out.substr(at, out.find('\n', at) - at);
  for (const std::string& name : warden::engine::preset_names()) {
    EXPECT_NE(line.find(name), std::string::npos) << name << " in: " << line;
  }
}
