// The HTTP edges as a client of the warden meets them, with real processes: a replica pin sent as a
// trailer is not honoured, an early 401 reaches a client still sending its body, and a stream cut when the
// drain's grace runs out ends with the error event of any broken stream.
#include <gtest/gtest.h>

#include <signal.h>

#include <string>

#include "gateway_support.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

// Fields after a chunked body are not read for routing: a pin there does not pin.
TEST(GatewayHttpEdges, APinInATrailerIsNotHonoured) {
  auto sim = start_sim(2);
  Warden w(dp_model(sim->port(), 2));
  const std::string body = chat_body("trailer pin", 2, false);
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  const std::string got = test_support::raw_exchange(
      w.port,
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
          std::string(size) + "\r\n" + body +
          "\r\n0\r\nX-Warden-Replica: 1\r\nX-data-parallel-rank: 1\r\n\r\n",
      10s);
  EXPECT_EQ(test_support::raw_status(got), 200) << got;
  EXPECT_NE(got.find("x-warden-route: new"), std::string::npos) << got;
}

// A client that sends its whole body before reading (Python's urllib) gets the 401 refused from the header,
// not a reset.
TEST(GatewayHttpEdges, AnEarly401ReachesAClientStillSendingItsBody) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), "api_keys: [k1]\n");
  const std::string body = padded_chat_body(4u << 20, false);
  const int fd = test_support::raw_connect(w.port);
  const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      break;
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) {
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  expect_raw_error(got, 401, false);
}

// The drain's grace runs out with a stream in flight: the client reads the error event in its API's
// format and a chunked body without its end, as when an engine breaks off, and the warden exits 0.
TEST(GatewayHttpEdges, AStreamCutWhenTheGraceRunsOutEndsWithAnErrorEvent) {
  auto sim = start_sim(1, 0.005);  // ~20 ms a token: 3000 tokens outlast the grace
  Warden w(dp_model(sim->port(), 1), "shutdown_grace: 1s\n");
  RawStream s(w.port, "/v1/chat/completions", chat_body("long", 3000, true));
  ASSERT_TRUE(s.read_until("data: ")) << s.received();
  w.proc->signal(SIGTERM);
  EXPECT_FALSE(s.read_until("")) << "the connection must close";
  EXPECT_TRUE(s.closed());
  const std::string& got = s.received();
  EXPECT_NE(got.find("data: {\"error\":{\"message\":\"the warden is shutting down"), std::string::npos)
      << got;
  EXPECT_FALSE(got.ends_with("0\r\n\r\n")) << got;
  EXPECT_EQ(got.find("[DONE]"), std::string::npos) << got;
  const auto code = w.proc->wait_exit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
}
