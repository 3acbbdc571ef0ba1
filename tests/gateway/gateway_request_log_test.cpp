// The request log line through a real warden: written at --log-level info (and the line is built only
// then), absent at warn.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "gateway_support.hpp"

using namespace gateway_test;

namespace {

// The stderr of a warden at `level` in front of `sim_port` that answered one chat request, once it has
// exited.
std::string log_of_one_request(int sim_port, const std::string& level) {
  TempDir dir;
  const auto cfg = dir.path / "warden.yaml";
  std::ofstream(cfg) << "models:\n" << dp_model(sim_port, 1);
  ChildProcess warden({WARDEN_BINARY, "serve", "--config", cfg.string(), "--listen", "127.0.0.1:0",
                       "--state-dir", (dir.path / "state").string(), "--log-level", level});
  Client c(warden.wait_for_port());
  const auto r = c.post("/v1/chat/completions", chat_body("hi", 2, false), {{"X-Warden-Session", "s1"}});
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(warden.stop(), 0);
  return warden.stderr_text();
}

}  // namespace

TEST(GatewayRequestLog, TheLineIsWrittenAtInfoAndNotAtWarn) {
  auto sim = start_sim(1);
  const std::string info = log_of_one_request(sim->port(), "info");
  EXPECT_NE(info.find("request model=m endpoint=/v1/chat/completions replica=0 route=new "
                      "session_source=warden_header thread=main status=200 stream=false"),
            std::string::npos)
      << info;
  const std::string warn = log_of_one_request(sim->port(), "warn");
  EXPECT_EQ(warn.find("request model="), std::string::npos) << warn;
}
