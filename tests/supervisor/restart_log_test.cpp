// Restart policy (pure) and the captured-output ring buffer.
#include <gtest/gtest.h>

#include "supervisor/log_ring.hpp"
#include "supervisor/restart.hpp"
#include "supervisor/supervisor.hpp"

namespace warden::supervisor {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

RunOutcome ready_for(milliseconds d) {
  return RunOutcome{true, d};
}

TEST(RestartTracker, DoublesFromOneSecondUpToSixtyAfterReadyRuns) {
  RestartTracker t;  // defaults: 1 s doubling to 60 s
  std::vector<long long> delays;
  for (int i = 0; i < 9; ++i) {
    auto d = t.after_exit(ready_for(seconds(5)));
    ASSERT_FALSE(d.give_up);
    delays.push_back(d.delay.count());
  }
  EXPECT_EQ(delays, (std::vector<long long>{1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000}));
}

TEST(RestartTracker, StableRunResetsTheBackoff) {
  RestartPolicy p;
  p.stable_after = seconds(60);
  RestartTracker t(p);
  t.after_exit(ready_for(seconds(1)));
  t.after_exit(ready_for(seconds(1)));
  EXPECT_EQ(t.after_exit(ready_for(seconds(59))).delay, seconds(4));
  EXPECT_EQ(t.after_exit(ready_for(seconds(60))).delay, seconds(1));
  EXPECT_EQ(t.consecutive_failures(), 1);
}

TEST(RestartTracker, GivesUpAfterStartsThatNeverBecameReady) {
  RestartPolicy p;
  p.initial_backoff = milliseconds(100);
  p.max_start_failures = 3;
  RestartTracker t(p);
  auto a = t.after_exit(RunOutcome{});
  auto b = t.after_exit(RunOutcome{});
  auto c = t.after_exit(RunOutcome{});
  EXPECT_FALSE(a.give_up);
  EXPECT_EQ(a.delay, milliseconds(100));
  EXPECT_FALSE(b.give_up);
  EXPECT_EQ(b.delay, milliseconds(200));
  EXPECT_TRUE(c.give_up);
}

TEST(RestartTracker, AReadyRunClearsTheStartFailures) {
  RestartPolicy p;
  p.max_start_failures = 2;
  RestartTracker t(p);
  EXPECT_FALSE(t.after_exit(RunOutcome{}).give_up);
  EXPECT_FALSE(t.after_exit(ready_for(milliseconds(10))).give_up);
  EXPECT_EQ(t.consecutive_start_failures(), 0);
  EXPECT_FALSE(t.after_exit(RunOutcome{}).give_up);
  EXPECT_TRUE(t.after_exit(RunOutcome{}).give_up);
}

TEST(WorstState, FailedBeatsEverything) {
  EXPECT_EQ(worst_state({EngineState::ready, EngineState::failed, EngineState::starting}),
            EngineState::failed);
  EXPECT_EQ(worst_state({EngineState::ready, EngineState::restarting}), EngineState::restarting);
  EXPECT_EQ(worst_state({EngineState::ready, EngineState::ready}), EngineState::ready);
}

std::vector<std::string> texts(const std::vector<LogLine>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines) {
    out.push_back(l.text);
  }
  return out;
}

TEST(LogRing, SplitsFragmentedInputPerStream) {
  LogRing r(10);
  r.feed(LogStream::out, "hel", 1);
  r.feed(LogStream::err, "err one\r\nerr", 2);
  r.feed(LogStream::out, "lo\nwor", 3);
  r.feed(LogStream::out, "ld\n\n", 4);
  r.flush(LogStream::err, 5);
  r.flush(LogStream::out, 6);  // nothing pending
  EXPECT_EQ(texts(r.tail(10)), (std::vector<std::string>{"err one", "hello", "world", "", "err"}));
  EXPECT_EQ(r.tail(10).at(0).stream, LogStream::err);
  EXPECT_EQ(r.tail(10).at(1).unix_ms, 3);
}

TEST(LogRing, RedactsSecretsInEveryLine) {
  LogRing r(10);
  r.redact({"sekret", "", "hf-sekret"});  // an empty value would match everywhere: ignored
  r.feed(LogStream::out, "non-default args: {'api_key': 'sekret'} sekretsekret hf-sekret\n", 1);
  r.note("started pid 7: vllm --api-key ***", 2);
  EXPECT_EQ(texts(r.tail(10)), (std::vector<std::string>{"non-default args: {'api_key': '***'} ****** ***",
                                                         "started pid 7: vllm --api-key ***"}));
}

TEST(LogRing, KeepsOnlyTheLastLinesAndCutsLongOnes) {
  LogRing r(3, 16);
  for (int i = 0; i < 10; ++i) {
    r.feed(LogStream::out, "line " + std::to_string(i) + "\n", i);
  }
  EXPECT_EQ(texts(r.tail(5)), (std::vector<std::string>{"line 7", "line 8", "line 9"}));
  EXPECT_EQ(texts(r.tail(1)), (std::vector<std::string>{"line 9"}));
  EXPECT_EQ(r.total_lines(), 10u);
  r.feed(LogStream::out, std::string(40, 'x'), 0);  // no newline: cut at 16 bytes
  auto t = r.tail(3);
  EXPECT_EQ(t.at(1).text, std::string(16, 'x'));
  EXPECT_EQ(t.at(2).text, std::string(16, 'x'));
  r.flush(LogStream::out, 0);
  EXPECT_EQ(r.tail(1).at(0).text, std::string(8, 'x'));
}

TEST(LogRing, SanitizesToValidUtf8) {
  EXPECT_EQ(sanitize_line("caf\xc3\xa9 \x1b[31mred\x1b[0m\t!"), "caf\xc3\xa9 ?[31mred?[0m\t!");
  EXPECT_EQ(sanitize_line("\xff\xc3"), "??");
  EXPECT_EQ(sanitize_line("\xed\xa0\x80"), "???");  // a UTF-16 surrogate is not valid UTF-8
  EXPECT_EQ(sanitize_line("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
}

}  // namespace
}  // namespace warden::supervisor
