// Outlier ejection and the progress watchdog, with real processes and engine stand-ins the test runs
// itself: a replica that answers its health and metrics but never answers inference, one whose streams
// stall after their first event, a black hole, a stuck engine that reports its requests running, and a
// SIGSTOPped `lm-warden sim`. Next to each: a `lm-warden sim` that works.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine_stand_ins.hpp"
#include "gateway_support.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

std::string two_replicas(int bad, int good) {
  return "  - name: m\n    served_model_name: " + kServed +
         "\n    replicas: { urls: [http://127.0.0.1:" + std::to_string(bad) +
         ", http://127.0.0.1:" + std::to_string(good) + "] }\n";
}

// One conversation's turn as its client saw it.
struct Turn {
  unsigned status = 0;
  std::string replica;
  std::string body;
  Clock::duration waited{};
  std::int64_t ended_unix_ms = 0;
};

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Turn turn(int port, const std::string& session, bool stream = false, int max_tokens = 20) {
  auto t = Client::short_timeouts();
  t.first_byte = 30s;
  Client c(port, t);
  Turn out;
  const auto started = Clock::now();
  // A stream cut visibly (no end of the chunked body) is an error for the client: its events are kept.
  std::string received;
  auto r = c.raw().post("/v1/chat/completions", chat_body("turn of " + session, max_tokens, stream),
                        {{"X-Warden-Session", session}}, [&](std::string_view piece) {
                          received.append(piece);
                          return true;
                        });
  out.waited = Clock::now() - started;
  out.ended_unix_ms = unix_ms();
  out.body = received;
  if (r) {
    out.status = r->status;
    out.replica = r->header("x-warden-replica");
    out.body = r->body.empty() ? received : r->body;
  }
  return out;
}

// One turn of each conversation, all at once.
std::vector<Turn> turns(int port, const std::vector<std::string>& sessions, bool stream = false) {
  std::vector<Turn> out(sessions.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    clients.emplace_back([&, i] { out[i] = turn(port, sessions[i], stream); });
  }
  for (auto& t : clients) {
    t.join();
  }
  return out;
}

std::vector<std::string> sessions(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(prefix + std::to_string(i));
  }
  return out;
}

std::string ejections(const std::string& reason) {
  return R"(lm_warden_replica_ejections_total{model="m",replica="0",reason=")" + reason + R"("})";
}

// When replica 0 was ejected (unix ms), from its card: the backoff's end minus the backoff.
std::int64_t ejected_at_ms(int port, std::chrono::milliseconds backoff) {
  const auto c = card(port);
  const auto& e = replica_of(c, 0).at("ejection");
  return e.is_null() ? 0 : num(e.at("until_unix_ms")) - backoff.count();
}

// The first turns: each failed on replica 0 with `failed` (the failures that ejected it) or was answered by
// replica 1, and none waited longer than `bound`. Returns how many failed.
int failed_on_0(const std::vector<Turn>& turns, unsigned failed, Clock::duration bound) {
  int n = 0;
  for (const Turn& t : turns) {
    EXPECT_LT(t.waited, bound) << t.body;
    EXPECT_TRUE((t.status == failed && t.replica == "0") || (t.status == 200 && t.replica == "1"))
        << t.status << " " << t.replica << " " << t.body;
    n += t.status == failed ? 1 : 0;
  }
  return n;
}

// After the first failures: every conversation's next turn and every new conversation answer 200 from the
// working replica.
void expect_routed_around(int port, const std::vector<std::string>& old_sessions) {
  for (const Turn& t : turns(port, old_sessions)) {
    EXPECT_EQ(t.status, 200u) << t.body;
    EXPECT_EQ(t.replica, "1");
  }
  for (const Turn& t : turns(port, sessions("fresh-", 6))) {
    EXPECT_EQ(t.status, 200u) << t.body;
    EXPECT_EQ(t.replica, "1");
  }
  EXPECT_EQ(replica_of(card(port), 0).at("ejected").as_bool(), true);
}

const std::string kFastFailures =
    "timeouts: { first_byte: 2s, idle: 2s }\n"
    "outlier: { consecutive_failures: 2, base_ejection: 60s, max_ejection: 120s, stall_after: 0s }\n";

}  // namespace

// A replica whose API server answers /health and /metrics (it looks idle) while its engine never answers:
// two first-byte timeouts eject it; the requests still waiting there go to the other replica at once, and
// nothing is placed on it afterwards. No client waits longer than one first_byte (2 s).
TEST(GatewayEjection, AReplicaThatNeverAnswersIsEjectedAfterTheFirstTimeouts) {
  FaultyEngine bad(FaultyEngine::Fault::hang, kServed);
  auto sim = start_sim(1, 0.005);  // ~20 ms a token: busy enough that placement uses both replicas
  Warden w(two_replicas(bad.port(), sim->port()), kFastFailures);
  const auto convs = sessions("hang-", 10);
  // One first_byte, and the answer from the other replica.
  EXPECT_GE(failed_on_0(turns(w.port, convs), 504, 3500ms), 2);  // the two that ejected it
  ASSERT_GE(bad.inference_requests(), 2) << "placement never used the hanging replica twice";
  EXPECT_EQ(metric_value(w.port, ejections("first_byte")), 1);
  const auto c = card(w.port);
  const auto& e = replica_of(c, 0).at("ejection");
  ASSERT_TRUE(e.is_object());
  EXPECT_EQ(e.at("reason").as_string(), "first_byte");
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_replica_ejected{model="m",replica="0"})"), 1);
  const int sent = bad.inference_requests();
  expect_routed_around(w.port, convs);
  EXPECT_EQ(bad.inference_requests(), sent);
  EXPECT_NE(w.proc->stderr_text().find("replica 0 ejected"), std::string::npos) << w.proc->stderr_text();
}

// The same with a black hole whose scrapes hang longer than the test (so health checks never catch it).
TEST(GatewayEjection, ABlackHoleIsEjectedWithoutWaitingForItsScrapes) {
  BlackHole hole;
  auto sim = start_sim(1, 0.005);
  Warden w(two_replicas(hole.port(), sim->port()),
           "metrics: { scrape_interval: 1s, scrape_timeout: 60s, unhealthy_after: 3 }\n" + kFastFailures);
  const auto convs = sessions("hole-", 10);
  ASSERT_GE(failed_on_0(turns(w.port, convs), 504, 3500ms), 2)
      << "placement used the black hole less than twice";
  EXPECT_EQ(metric_value(w.port, ejections("first_byte")), 1);
  EXPECT_EQ(replica_of(card(w.port), 0).at("healthy").as_bool(), true);  // its scrape still hangs
  expect_routed_around(w.port, convs);
}

// Streams that send their first event and then nothing: each breaks after timeouts.idle (the client sees
// the error event); two eject the replica.
TEST(GatewayEjection, StreamsThatStallAfterTheirFirstEventEjectTheReplica) {
  FaultyEngine bad(FaultyEngine::Fault::stall, kServed);
  auto sim = start_sim(1, 0.005);
  Warden w(two_replicas(bad.port(), sim->port()), kFastFailures);
  const auto convs = sessions("stall-", 8);
  int broken = 0;
  for (const Turn& t : turns(w.port, convs, true)) {
    EXPECT_LT(t.waited, 3500ms) << t.body;  // one idle timeout at most
    if (t.status == 200) {
      EXPECT_EQ(t.replica, "1");
    } else {
      broken += 1;  // the stream from replica 0, cut with an error event
      EXPECT_NE(t.body.find("stopped sending its stream"), std::string::npos) << t.body;
    }
  }
  EXPECT_GE(broken, 2);
  ASSERT_GE(bad.inference_requests(), 2) << "placement never used the stalling replica";
  EXPECT_EQ(metric_value(w.port, ejections("stream_stall")), 1);
  expect_routed_around(w.port, convs);
}

// An engine that answers 500 at once: its answers reach the client as they are, and two in a row eject it.
TEST(GatewayEjection, AnEngineAnswering5xxIsEjected) {
  FaultyEngine bad(FaultyEngine::Fault::error, kServed);
  auto sim = start_sim(1, 0.005);
  Warden w(two_replicas(bad.port(), sim->port()), kFastFailures);
  const auto convs = sessions("error-", 8);
  ASSERT_GE(failed_on_0(turns(w.port, convs), 500, 2s), 2)
      << "placement used the failing replica less than twice";
  EXPECT_EQ(metric_value(w.port, ejections("gateway_error")), 1);
  expect_routed_around(w.port, convs);
}

// A stuck engine that reports its requests running while its token counters stand still is ejected by the
// progress watchdog (stall_after 1 s) long before first_byte (30 s): the requests waiting there answer
// from the other replica within a second of the ejection.
TEST(GatewayEjection, TheProgressWatchdogEjectsAStuckEngineBeforeAnyTimeout) {
  FaultyEngine bad(FaultyEngine::Fault::hang, kServed);
  bad.report_hanging_as_running(true);
  auto sim = start_sim(1, 0.005);
  Warden w(two_replicas(bad.port(), sim->port()),
           "timeouts: { first_byte: 30s }\n"
           "outlier: { consecutive_failures: 3, base_ejection: 60s, max_ejection: 120s, stall_after: 1s }\n");
  const auto convs = sessions("stuck-", 8);
  const std::vector<Turn> first = turns(w.port, convs);
  ASSERT_GE(bad.inference_requests(), 1) << "placement never used the stuck replica";
  const std::int64_t ejected_at = ejected_at_ms(w.port, 60s);
  ASSERT_GT(ejected_at, 0);
  for (const Turn& t : first) {
    EXPECT_EQ(t.status, 200u) << t.body;
    EXPECT_EQ(t.replica, "1");
    EXPECT_LT(t.waited, 5s);                        // the bound and a scrape or two, not first_byte
    EXPECT_LT(t.ended_unix_ms - ejected_at, 1000);  // the waiting ones: within a second of the ejection
  }
  EXPECT_EQ(metric_value(w.port, ejections("no_progress")), 1);
  EXPECT_GE(metric_value(w.port,
                         R"(lm_warden_requests_total{model="m",replica="1",route="failover",status="200"})"),
            1);
  expect_routed_around(w.port, convs);
}

// After its backoff an ejected replica gets one probe; once the engine answers again the probe succeeds,
// the replica is re-admitted and new conversations reach it again.
TEST(GatewayEjection, ARecoveredReplicaIsReadmittedByItsProbe) {
  FaultyEngine bad(FaultyEngine::Fault::hang, kServed);
  auto sim = start_sim(1);
  Warden w(two_replicas(bad.port(), sim->port()),
           "timeouts: { first_byte: 1s }\n"
           "outlier: { consecutive_failures: 1, base_ejection: 1s, max_ejection: 10s }\n");
  Client c(w.port);
  const auto pinned = c.post("/v1/chat/completions", chat_body("pinned"), {{"X-Warden-Replica", "0"}});
  EXPECT_EQ(pinned.status, 504u);
  ASSERT_EQ(replica_of(card(w.port), 0).at("ejected").as_bool(), true);
  bad.set_fault(FaultyEngine::Fault::none);  // the engine answers again
  int n = 0;
  const bool readmitted = wait_until(
      [&] {
        return turn(w.port, "probe-" + std::to_string(n++)).replica == "0" &&
               !replica_of(card(w.port), 0).at("ejected").as_bool();
      },
      20s);
  ASSERT_TRUE(readmitted) << w.proc->stderr_text();
  bool used_again = false;
  for (int i = 0; i < 40 && !used_again; ++i) {
    used_again = turn(w.port, "after-" + std::to_string(i)).replica == "0";
  }
  EXPECT_TRUE(used_again);
}

// A SIGSTOPped engine: its scrapes stop answering and it is marked unhealthy; the turns waiting on it
// answer from the other replica, well within first_byte; after SIGCONT it is used again.
TEST(GatewayEjection, ASigstoppedEngineIsRoutedAroundAndUsedAgainAfterSigcont) {
  auto stopped = start_sim(1, 0.005);
  auto sim = start_sim(1, 0.005);
  Warden w(two_replicas(stopped->port(), sim->port()),
           "timeouts: { first_byte: 10s }\n"
           "outlier: { consecutive_failures: 2, base_ejection: 1s, max_ejection: 10s }\n");
  ASSERT_TRUE(wait_until([&] { return replica_of(card(w.port), 0).at("scraped").as_bool(); }, 10s));
  stopped->signal(SIGSTOP);
  const auto convs = sessions("stopped-", 6);
  for (const Turn& t : turns(w.port, convs)) {
    EXPECT_EQ(t.status, 200u) << t.body;
    EXPECT_EQ(t.replica, "1");
    EXPECT_LT(t.waited, 5s);  // marked unhealthy after two failed scrapes (0.5 s each), not first_byte
  }
  stopped->signal(SIGCONT);
  bool used_again = false;
  for (int i = 0; i < 60 && !used_again; ++i) {
    used_again = turn(w.port, "back-" + std::to_string(i)).replica == "0";
  }
  EXPECT_TRUE(used_again) << w.proc->stderr_text();
}

namespace {

// A prompt of about `words` tokens for the sim's tokenizer (one per word), its own from the first block on.
std::string long_prompt(const std::string& start, int words) {
  std::string text = start;
  for (int i = 0; i < words; ++i) {
    text += " lorem";
  }
  return text;
}

}  // namespace

// Two prompts that each take longer than stall_after to prefill (about 10 s against 6 s), on a two-replica
// model (`lm-warden sim`, its A4000 preset at time scale 1): the engines count no token while they
// prefill, and that is not a stall (the allowance is at most 3 x stall_after). No replica is ejected, the
// small requests sent beside them are all answered, and so are both long ones.
TEST(GatewayEjection, PrefillsLongerThanStallAfterAreNotStalls) {
  ChildProcess sim({WARDEN_BINARY, "sim", "--port", "0", "--data-parallel-size", "2", "--preset",
                    "a4000-qwen3-4b", "--time-scale", "1", "--served-model-name", kServed, "--log-level",
                    "warn"});
  const int sim_port = sim.wait_for_port();
  Warden w(dp_model(sim_port, 2), "outlier: { consecutive_failures: 1, stall_after: 6s }\n");
  std::vector<Turn> longs(2);
  std::vector<std::thread> clients;
  for (int i = 0; i < 2; ++i) {
    clients.emplace_back([&, i] {
      auto t = Client::short_timeouts();
      t.first_byte = 60s;
      Client c(w.port, t);
      const auto started = Clock::now();
      const auto r = c.post("/v1/chat/completions",
                            chat_body(long_prompt("prompt-" + std::to_string(i), 28'000), 4, false),
                            {{"X-Warden-Replica", std::to_string(i)}});
      longs[static_cast<std::size_t>(i)] =
          Turn{r.status, r.header("x-warden-replica"), r.body, Clock::now() - started};
    });
  }
  ASSERT_TRUE(wait_until([&] { return sim_running(sim_port, 0) + sim_running(sim_port, 1) >= 2; }, 20s));
  for (int i = 0; i < 6; ++i) {
    const Turn t = turn(w.port, "small-" + std::to_string(i));
    EXPECT_EQ(t.status, 200u) << t.body;
  }
  for (auto& c : clients) {
    c.join();
  }
  for (const Turn& t : longs) {
    EXPECT_EQ(t.status, 200u) << t.body;
    EXPECT_GT(t.waited, 7s) << "the prefill should take well over stall_after";
  }
  Client c(w.port);
  const std::string metrics = c.get("/metrics", {{"Authorization", "Bearer secret"}}).body;
  EXPECT_EQ(metrics.find("lm_warden_replica_ejections_total{"), std::string::npos) << metrics;
}

// Streams relaying from a replica whose engine then stalls (it reports them running, its counters stand
// still): the watchdog ejects the replica and each stream ends at once with an error event in its
// client's format (Anthropic's `event: error`, OpenAI's error object), which an agent retries on, instead
// of silence until timeouts.idle (300 s).
TEST(GatewayEjection, StreamsFromAReplicaEjectedAsStalledEndWithAnErrorEvent) {
  FaultyEngine bad(FaultyEngine::Fault::stall, kServed);
  bad.report_hanging_as_running(true);
  auto sim = start_sim(1);
  Warden w(two_replicas(bad.port(), sim->port()), "outlier: { stall_after: 1s }\n");
  const std::string body = chat_body("a stream that will stall", 50, true);
  std::vector<std::unique_ptr<RawStream>> streams;
  for (const std::string target : {"/v1/chat/completions", "/v1/messages"}) {
    streams.push_back(std::make_unique<RawStream>(w.port));
    streams.back()->send(
        "POST " + target +
        " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nanthropic-version: "
        "2023-06-01\r\nX-Warden-Replica: 0\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  for (auto& s : streams) {
    ASSERT_TRUE(s->read_until("\"first\"", 10s)) << s->received();
  }
  const auto relaying = Clock::now();
  ASSERT_TRUE(streams[0]->read_until("data: {\"error\":", 20s)) << streams[0]->received();
  ASSERT_TRUE(streams[1]->read_until("event: error\ndata: {\"type\":\"error\"", 20s))
      << streams[1]->received();
  EXPECT_LT(Clock::now() - relaying, 10s);
  for (auto& s : streams) {
    EXPECT_NE(s->received().find("retry the request"), std::string::npos) << s->received();
  }
  EXPECT_EQ(metric_value(w.port, ejections("no_progress")), 1);
  // Counted once each request is finished, just after its client read the event.
  EXPECT_TRUE(wait_until(
      [&] {
        return metric_value(w.port, R"(lm_warden_stream_breaks_total{model="m",cause="stalled"})") == 2;
      },
      5s));
}
