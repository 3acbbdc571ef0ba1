#include "gateway/proxy/prefix_watch.hpp"

#include <gtest/gtest.h>

#include "gateway/model_runtime.hpp"

using namespace warden::gateway;
using warden::protocol::PromptStart;

TEST(PrefixWatch, ABreakIsTheSameSessionWithAnotherStartOfTheSameLength) {
  PrefixWatch w;
  EXPECT_FALSE(w.observe(1, {10, 4096}));
  EXPECT_FALSE(w.observe(1, {10, 4096}));  // the next turn keeps its start
  EXPECT_FALSE(w.observe(2, {20, 4096}));  // another session
  EXPECT_TRUE(w.observe(1, {11, 4096}));
  EXPECT_FALSE(w.observe(1, {11, 4096}));  // the new start is kept
  EXPECT_EQ(w.breaks(), 1u);
  // A short start growing is not compared; an empty one is ignored.
  EXPECT_FALSE(w.observe(3, {30, 100}));
  EXPECT_FALSE(w.observe(3, {31, 200}));
  EXPECT_FALSE(w.observe(3, {0, 0}));
  EXPECT_TRUE(w.observe(3, {32, 200}));
  EXPECT_EQ(w.breaks(), 2u);
}

TEST(PrefixWatch, BoundedTableForgetsRatherThanInventsBreaks) {
  PrefixWatch w(2);
  w.observe(1, {10, 4096});
  w.observe(2, {20, 4096});
  w.observe(3, {30, 4096});  // full: emptied first
  EXPECT_FALSE(w.observe(1, {99, 4096}));
  EXPECT_EQ(w.breaks(), 0u);
}

TEST(ModelRuntimeContext, SmallestReportedLengthOverItsUrls) {
  auto r = parse_config(
      "models:\n  - name: m\n    replicas: { urls: [http://127.0.0.1:9001, http://127.0.0.1:9002] }\n",
      "t.yaml");
  ASSERT_TRUE(r.ok()) << r.error_text();
  ModelRuntime m(r.config->models[0], 3);
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
