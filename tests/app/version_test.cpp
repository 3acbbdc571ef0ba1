#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "app/version.hpp"

namespace {

std::string run(const std::string& cmd) {
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    return out;
  }
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) {
    out += buf.data();
  }
  pclose(pipe);
  return out;
}

TEST(Version, BinaryPrintsItsVersion) {
  EXPECT_EQ(run(std::string(WARDEN_BINARY) + " version"),
            std::string("lm-warden ") + warden::app::kVersion + "\n");
}

TEST(Version, UnknownSubcommandFails) {
  EXPECT_NE(std::system((std::string(WARDEN_BINARY) + " no-such-command >/dev/null 2>&1").c_str()), 0);
}

}  // namespace
