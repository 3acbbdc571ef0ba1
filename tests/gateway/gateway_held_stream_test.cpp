// Held streams kept alive, through real processes: a streaming request that admission holds has its
// response started at once (200, text/event-stream), gets its API's keep-alive event while it waits, then
// the engine's events after a comment saying where it went; one that then fails ends with an error event
// in its API's format; a full queue still answers a stream 503 with Retry-After.
#include <gtest/gtest.h>

#include "admission_support.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

namespace {

// The header of a raw response: what came before the blank line.
std::string head_of(const RawStream& s) {
  const auto end = s.received().find("\r\n\r\n");
  return end == std::string::npos ? s.received() : s.received().substr(0, end);
}

}  // namespace

// "b" does not fit beside "a": held, yet its client has a 200 and an event stream at once, and pings
// while it waits; once "a" shrinks, "b" goes and its events follow, after the placement as SSE comments.
TEST(GatewayHeldStream, AHeldAnthropicStreamStartsAtOnceGetsPingsAndThenItsAnswer) {
  AdmissionSetup s("{ mode: auto, max_queue: 4, max_wait: 60s }");
  RawStream b(s.w.port, "/v1/messages", chat_body(long_text("bravo"), 4, true));
  ASSERT_TRUE(b.read_until("\r\n\r\n", 10s)) << b.received();
  const std::string head = head_of(b);
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
  EXPECT_NE(head.find("text/event-stream"), std::string::npos) << head;
  EXPECT_NE(head.find("x-warden-route: queued"), std::string::npos) << head;
  EXPECT_EQ(queued_now(s.w.port), 1) << "answered while still held";

  ASSERT_TRUE(b.read_until("event: ping", 15s)) << b.received();
  EXPECT_EQ(queued_now(s.w.port), 1);
  EXPECT_EQ(sim_requests(s.sim->port()), 1) << "the held request is not at the engine";
  EXPECT_EQ(metric_value(s.w.port, R"(lm_warden_queue_held_by_tenant{model="m",tenant="none"})"), 1);

  Client c(s.w.port);
  const auto again = c.post("/v1/chat/completions", chat_body("short", 4, false), session("a"));
  EXPECT_EQ(again.status, 200u);
  ASSERT_TRUE(b.read_until("message_stop", 30s)) << b.received();
  ASSERT_TRUE(b.read_until("\r\n0\r\n\r\n", 10s)) << "the body ends whole: " << b.received();
  const std::string& body = b.received();
  EXPECT_NE(body.find(": x-warden-route: new\n"), std::string::npos) << body;
  EXPECT_NE(body.find(": x-warden-replica: 0\n"), std::string::npos) << body;
  EXPECT_NE(body.find(": x-warden-queued: "), std::string::npos) << body;
  EXPECT_LT(body.find("event: ping"), body.find("event: message_start")) << body;
  EXPECT_EQ(queued_now(s.w.port), 0);
  EXPECT_EQ(metric_value(s.w.port, R"(lm_warden_queue_held_by_tenant{model="m",tenant="none"})"), 0)
      << "no series for a tenant holding nothing";
  EXPECT_EQ(metric_value(s.w.port, R"(lm_warden_queue_admitted_total{model="m"})"), 1);
  EXPECT_TRUE(wait_until([&] {
    return metric_value(s.w.port,
                        R"(lm_warden_requests_total{model="m",replica="0",route="new",status="200"})") == 2;
  })) << "logged and counted by its final route, like \"a\"";
}

// An OpenAI stream held to its bound: SSE comments keep it alive, then it goes over capacity.
TEST(GatewayHeldStream, AHeldOpenAiStreamGetsCommentsUntilItsBound) {
  AdmissionSetup s("{ mode: auto, max_queue: 4, max_wait: 6s }");
  RawStream b(s.w.port, "/v1/chat/completions", chat_body(long_text("charlie"), 4, true));
  ASSERT_TRUE(b.read_until(": keep-alive\n\n", 15s)) << b.received();
  ASSERT_TRUE(b.read_until("data: [DONE]", 30s)) << b.received();
  const std::string& body = b.received();
  EXPECT_LT(body.find(": keep-alive"), body.find("data: {")) << body;
  EXPECT_NE(body.find(": x-warden-route: new\n"), std::string::npos) << body;
  EXPECT_EQ(sim_requests(s.sim->port()), 2);
}

// The engine refuses the held stream when its turn comes: the client, whose 200 went long ago, gets the
// engine's error as an error event in its API's format, and a body that never ends whole.
TEST(GatewayHeldStream, AHeldStreamTheEngineRefusesGetsItsErrorAsAnEvent) {
  AdmissionSetup s("{ mode: auto, max_queue: 4, max_wait: 3s }");
  RawStream b(s.w.port, "/v1/chat/completions", chat_body(long_text("delta"), -1, true));
  ASSERT_TRUE(b.read_until("\r\n\r\n", 10s)) << b.received();
  EXPECT_NE(b.received().find("HTTP/1.1 200"), std::string::npos) << b.received();
  ASSERT_TRUE(b.read_until("data: {\"error\"", 30s)) << b.received();
  EXPECT_FALSE(b.read_until("never sent", 10s)) << "closed";
  const std::string& body = b.received();
  EXPECT_TRUE(b.closed());
  EXPECT_NE(body.find("max_tokens"), std::string::npos) << "the engine's own message: " << body;
  EXPECT_NE(body.find(R"("type":"invalid_request_error")"), std::string::npos) << body;
  EXPECT_EQ(body.find("\r\n0\r\n\r\n"), std::string::npos) << "no terminating chunk: " << body;
}

// A drain stops the queue: the held stream learns it from an error event in its API's format (the 503
// it would have been answered), at once.
TEST(GatewayHeldStream, AHeldStreamRefusedByADrainGetsAnErrorEvent) {
  AdmissionSetup s("{ mode: auto, max_queue: 4, max_wait: 60s }", "shutdown_grace: 20s\n");
  RawStream b(s.w.port, "/v1/messages", chat_body(long_text("echo"), 4, true));
  ASSERT_TRUE(b.read_until("\r\n\r\n", 10s)) << b.received();
  ASSERT_EQ(queued_now(s.w.port), 1);
  s.w.proc->signal(SIGTERM);
  ASSERT_TRUE(b.read_until("event: error", 10s)) << b.received();
  EXPECT_FALSE(b.read_until("never sent", 10s)) << "closed";
  const std::string& body = b.received();
  EXPECT_NE(body.find(R"("type":"overloaded_error")"), std::string::npos) << body;
  EXPECT_NE(body.find("shutting down"), std::string::npos) << body;
  EXPECT_EQ(body.find("message_start"), std::string::npos) << body;
}

// A stream that cannot even join the queue is refused as before: a 503 with Retry-After, not a 200.
TEST(GatewayHeldStream, AStreamRefusedByAFullQueueIsAnswered503) {
  AdmissionSetup s("{ mode: auto, max_queue: 1, max_wait: 60s }");
  RawStream waiting(s.w.port, "/v1/chat/completions", chat_body(long_text("echo"), 4, true));
  ASSERT_TRUE(wait_until([&] { return queued_now(s.w.port) == 1; }));
  RawStream refused(s.w.port, "/v1/chat/completions", chat_body(long_text("foxtrot"), 4, true));
  ASSERT_TRUE(refused.read_until("\r\n\r\n", 10s)) << refused.received();
  EXPECT_NE(refused.received().find("HTTP/1.1 503"), std::string::npos) << refused.received();
  EXPECT_NE(refused.received().find("Retry-After: 60"), std::string::npos) << refused.received();
  EXPECT_EQ(queued_now(s.w.port), 1);
}
