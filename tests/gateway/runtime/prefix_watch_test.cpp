#include "gateway/runtime/prefix_watch.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "gateway/runtime/model_runtime.hpp"

using namespace warden::gateway;
using warden::protocol::PromptStart;

namespace {

// A request of thread `thread` of session 1 that offers tools, with a start digest of `hash` over `bytes`
// whose head (system, tools) is `head`, and a prompt of `tokens`.
ThreadStart turn(std::uint64_t thread, std::uint64_t hash, std::size_t bytes = 4096, std::uint64_t head = 7,
                 std::uint64_t tokens = 2000) {
  return {1, thread, PromptStart{hash, bytes, head, 3000}, true, tokens};
}

}  // namespace

TEST(PrefixWatch, ABreakIsTheSameThreadWithAnotherStartOfTheSameLength) {
  PrefixWatch w;
  EXPECT_EQ(w.observe(turn(1, 10)), StartVerdict::first);
  EXPECT_EQ(w.observe(turn(1, 10)), StartVerdict::same);   // the next turn keeps its start
  EXPECT_EQ(w.observe(turn(2, 20)), StartVerdict::first);  // another thread
  EXPECT_EQ(w.observe(turn(1, 11)), StartVerdict::broke);
  EXPECT_EQ(w.observe(turn(1, 11)), StartVerdict::same);  // the new start is kept
  EXPECT_EQ(w.breaks(), 1u);
  EXPECT_EQ(w.counts(1).breaks, 1u);
  EXPECT_EQ(w.counts(2).breaks, 0u);
  // A short start growing is not compared; an empty one is ignored.
  EXPECT_EQ(w.observe(turn(3, 30, 100)), StartVerdict::first);
  EXPECT_EQ(w.observe(turn(3, 31, 200)), StartVerdict::first);
  EXPECT_EQ(w.observe(turn(3, 0, 0)), StartVerdict::first);
  EXPECT_EQ(w.observe(turn(3, 32, 200)), StartVerdict::broke);
  EXPECT_EQ(w.breaks(), 2u);
}

TEST(PrefixWatch, AMainThreadAndItsSubagentInterleavedBreakNothing) {
  PrefixWatch w;
  for (int i = 0; i < 5; ++i) {
    EXPECT_NE(w.observe(turn(1, 10, 4096, 7, 12000 + 500 * i)), StartVerdict::broke);
    EXPECT_NE(w.observe(turn(2, 20, 4096, 8, 7000 + 500 * i)), StartVerdict::broke);
  }
  EXPECT_EQ(w.breaks(), 0u);
}

TEST(PrefixWatch, ACompactionKeepsTheHeadAndHalvesThePrompt) {
  PrefixWatch w;
  w.observe(turn(1, 10, 4096, 7, 90000));
  // The history replaced by a summary: the first message changed, system and tools kept.
  EXPECT_EQ(w.observe(turn(1, 11, 4096, 7, 15000)), StartVerdict::compacted);
  EXPECT_EQ(w.compactions(), 1u);
  EXPECT_EQ(w.counts(1).compactions, 1u);
  EXPECT_EQ(w.breaks(), 0u);
  // A start kept whole (a long system prompt fills the digest) with the prompt halved: a compaction too.
  EXPECT_EQ(w.observe(turn(1, 11, 4096, 7, 7000)), StartVerdict::compacted);
  // The head changed: a break, however much the prompt shrank.
  EXPECT_EQ(w.observe(turn(1, 12, 4096, 9, 2000)), StartVerdict::broke);
  // A changed first message without the prompt shrinking (an edited history): a break.
  EXPECT_EQ(w.observe(turn(1, 13, 4096, 9, 2100)), StartVerdict::broke);
  // Small prompts shrinking are noise, not a summary.
  w.observe(turn(4, 40, 4096, 7, 900));
  EXPECT_EQ(w.observe(turn(4, 41, 4096, 7, 100)), StartVerdict::broke);
  EXPECT_EQ(w.compactions(), 2u);
  EXPECT_EQ(w.breaks(), 3u);
}

TEST(PrefixWatch, SideRequestsBelongToNoThread) {
  PrefixWatch w;
  // Before the session offered tools, a request without them is a turn like any other (a chat client).
  ThreadStart chat{5, 5, PromptStart{50, 4096, 5, 100}, false, 300};
  EXPECT_EQ(w.observe(chat), StartVerdict::first);
  EXPECT_EQ(w.observe(turn(1, 10)), StartVerdict::first);
  // Session 1 offers tools: its requests without any are side requests, never compared nor kept.
  ThreadStart title{1, 1, PromptStart{99, 4096, 98, 100}, false, 100};
  EXPECT_EQ(w.observe(title), StartVerdict::side);
  EXPECT_EQ(w.observe(turn(1, 10)), StartVerdict::same);
  EXPECT_EQ(w.side_requests(), 1u);
  // The chat session's turns stay turns.
  chat.start.hash = 51;
  EXPECT_EQ(w.observe(chat), StartVerdict::broke);
  // A thread's first request without tools and its next with them are not compared.
  EXPECT_EQ(w.observe({6, 6, PromptStart{60, 4096, 6, 100}, false, 300}), StartVerdict::first);
  EXPECT_EQ(w.observe({6, 6, PromptStart{61, 4096, 6, 100}, true, 300}), StartVerdict::first);
}

TEST(PrefixWatch, BoundedTableForgetsRatherThanInventsBreaks) {
  PrefixWatch w(2);
  w.observe(turn(1, 10));
  w.observe(turn(2, 20));
  w.observe(turn(3, 30));  // full: emptied first
  EXPECT_EQ(w.observe(turn(1, 99)), StartVerdict::first);
  EXPECT_EQ(w.breaks(), 0u);
}

TEST(ModelRuntimeContext, SmallestReportedLengthOverItsUrls) {
  auto r = parse_config(
      "models:\n  - name: m\n    replicas: { urls: [http://127.0.0.1:9001, http://127.0.0.1:9002] }\n",
      "t.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  boost::asio::io_context io;
  warden::core::SplitMixRng rng;
  ModelRuntime m(r.config->models[0], 3, io.get_executor(), rng);
  EXPECT_EQ(m.max_model_len(), std::nullopt);
  m.set_max_model_len(r.config->models[0].urls[0], 65536);
  EXPECT_EQ(m.max_model_len(), 65536);
  m.set_max_model_len(r.config->models[0].urls[1], 32768);
  EXPECT_EQ(m.max_model_len(), 32768);
  m.set_max_model_len(r.config->models[0].urls[1], std::nullopt);  // restarted without it
  EXPECT_EQ(m.max_model_len(), 65536);
  m.set_max_model_len(r.config->models[0].urls[0], 40960);  // restarted with another figure
  EXPECT_EQ(m.max_model_len(), 40960);
}
