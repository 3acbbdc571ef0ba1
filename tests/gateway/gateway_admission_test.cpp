// Admission through real processes: a sim whose KV cache holds about one long conversation, so the core
// holds a second new one back (route `queued`). The held request goes once room frees, or at its
// max_wait; a full queue answers 503 with Retry-After in the client's format; a client that leaves while
// its request waits is dropped and the engine never sees the request.
#include <gtest/gtest.h>

#include "admission_support.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

// Conversation "b" does not fit beside "a" and waits; "a" then comes back with a short prompt, its
// working set shrinks, and "b" goes as soon as that turn is done (or a scrape shows the room), long
// before its max_wait, as a new conversation.
TEST(GatewayAdmission, AQueuedRequestIsSentOnceRoomFrees) {
  AdmissionSetup s("{ mode: auto, max_queue: 4, max_wait: 60s }");
  Pending b(s.w.port, "/v1/chat/completions", chat_body(long_text("bravo"), 4, false), session("b"));
  ASSERT_TRUE(wait_until([&] { return queued_now(s.w.port) == 1; }));
  EXPECT_EQ(metric_value(s.w.port, R"(lm_warden_queue_length{model="m"})"), 1);
  EXPECT_EQ(sim_requests(s.sim->port()), 1) << "the held request is not at the engine";

  Client c(s.w.port);
  const auto again = c.post("/v1/chat/completions", chat_body("short", 4, false), session("a"));
  EXPECT_EQ(again.status, 200u);
  EXPECT_EQ(again.header("x-warden-route"), "sticky") << "a resident conversation is never held";

  const auto r = b.get();
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.header("x-warden-route"), "new") << "the final route";
  const double waited = queued_header(r);
  EXPECT_GT(waited, 0);
  EXPECT_LT(waited, 50) << "went when room freed, not at its bound";
  EXPECT_EQ(queued_now(s.w.port), 0);
  EXPECT_EQ(metric_value(s.w.port, R"(lm_warden_queue_admitted_total{model="m"})"), 1);
  EXPECT_EQ(metric_value(s.w.port, R"(lm_warden_queue_wait_seconds_count{model="m"})"), 1);
  EXPECT_EQ(metric_value(s.w.port, R"(lm_warden_queue_length{model="m"})"), 0);
}

// The head waits its max_wait and is then admitted over capacity.
TEST(GatewayAdmission, TheHeadIsAdmittedAtMaxWait) {
  AdmissionSetup s("{ mode: auto, max_queue: 4, max_wait: 1s }");
  Client c(s.w.port);
  const auto started = std::chrono::steady_clock::now();
  const auto r = c.post("/v1/messages", chat_body(long_text("charlie"), 4, false),
                        {{"X-Warden-Session", "c"}, {"anthropic-version", "2023-06-01"}});
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.header("x-warden-route"), "new");
  const double waited = queued_header(r);
  EXPECT_GE(waited, 1.0);
  EXPECT_LT(waited, 10.0);
  EXPECT_GE(std::chrono::steady_clock::now() - started, 1s);
  EXPECT_EQ(metric_value(s.w.port, R"(lm_warden_queue_wait_seconds_count{model="m"})"), 1);
}

// A client that hangs up while its request waits: the request leaves the queue, is counted as abandoned
// and never reaches the engine, while the one queued after it still goes (here when admission is
// turned off through the admin API, which routes the queue again at once).
TEST(GatewayAdmission, ADisconnectWhileQueuedNeverReachesTheEngine) {
  AdmissionSetup s("{ mode: auto, max_queue: 4, max_wait: 60s }");
  {
    // No session header: the conversation is the prompt's fingerprint.
    RawStream gone(s.w.port, "/v1/chat/completions", chat_body(long_text("delta"), 4, true));
    ASSERT_TRUE(wait_until([&] { return queued_now(s.w.port) == 1; }));
  }  // hangs up
  ASSERT_TRUE(wait_until(
      [&] { return metric_value(s.w.port, R"(lm_warden_queue_abandoned_total{model="m"})") == 1; }));
  EXPECT_EQ(queued_now(s.w.port), 0);

  Pending e(s.w.port, "/v1/chat/completions", chat_body(long_text("echo"), 4, false), session("e"));
  ASSERT_TRUE(wait_until([&] { return queued_now(s.w.port) == 1; }));
  Client c(s.w.port);
  const auto patched = c.raw().request(boost::beast::http::verb::patch, "/api/models/m/routing",
                                       R"({"admission": "off"})", {{"Authorization", "Bearer secret"}});
  ASSERT_TRUE(patched);
  EXPECT_EQ(patched->status, 200u) << patched->body;
  const auto r = e.get();
  EXPECT_EQ(r.status, 200u) << r.body;
  queued_header(r);
  // "a" and "e" reached the engine; the request whose client left did not.
  EXPECT_EQ(sim_requests(s.sim->port()), 2);
  EXPECT_EQ(metric_value(s.w.port, R"(lm_warden_queue_admitted_total{model="m"})"), 1);
  EXPECT_EQ(metric_value(s.w.port,
                         R"(lm_warden_requests_total{model="m",replica="none",route="queued",status="499"})"),
            1);
}

// With max_queue requests waiting, the next one is refused at once: 503, Retry-After, and an error body
// in the client's own format.
TEST(GatewayAdmission, AFullQueueAnswers503WithRetryAfterInTheClientsFormat) {
  AdmissionSetup s("{ mode: auto, max_queue: 1, max_wait: 60s }");
  RawStream waiting(s.w.port, "/v1/chat/completions", chat_body(long_text("foxtrot"), 4, true));
  ASSERT_TRUE(wait_until([&] { return queued_now(s.w.port) == 1; }));

  Client c(s.w.port);
  const auto openai = c.post("/v1/chat/completions", chat_body(long_text("golf"), 4, false), session("g"));
  expect_openai_error(openai, 503);
  EXPECT_EQ(openai.header("retry-after"), "60");
  const auto anthropic = c.post("/v1/messages", chat_body(long_text("hotel"), 4, false),
                                {{"X-Warden-Session", "h"}, {"anthropic-version", "2023-06-01"}});
  expect_anthropic_error(anthropic, 503);
  EXPECT_EQ(anthropic.header("retry-after"), "60");
  EXPECT_EQ(metric_value(s.w.port, R"(lm_warden_queue_rejected_total{model="m",reason="full"})"), 2);
  EXPECT_EQ(queued_now(s.w.port), 1) << "the waiting one keeps its place";
  EXPECT_EQ(sim_requests(s.sim->port()), 1);
}

// SIGTERM while a request waits: the drain does not wait for room that will not come. The held request
// is answered 503 draining with Retry-After at once, and the warden exits well within its grace period.
TEST(GatewayAdmission, ADrainRefusesTheHeldRequestsInsteadOfWaitingForThem) {
  AdmissionSetup s("{ mode: auto, max_queue: 4, max_wait: 60s }", "shutdown_grace: 20s\n");
  Pending b(s.w.port, "/v1/chat/completions", chat_body(long_text("india"), 4, false), session("i"));
  ASSERT_TRUE(wait_until([&] { return queued_now(s.w.port) == 1; }));
  const auto signalled = std::chrono::steady_clock::now();
  s.w.proc->signal(SIGTERM);
  const auto r = b.get();
  expect_openai_error(r, 503);
  EXPECT_EQ(r.header("retry-after"), "60");
  EXPECT_NE(r.body.find("draining"), std::string::npos) << r.body;
  const auto code = s.w.proc->wait_exit(25s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, 10s);
}
