// Test helper: one request through a fresh engine, to its last token.
#pragma once

#include <gtest/gtest.h>

#include "engine/engine.hpp"

namespace warden::engine::test {

struct Finished {
  Tokens tokens;  // the reply
  Usage usage;    // as the last event carried it
};

inline Finished run_one(const EngineConfig& config, std::uint64_t seed, RequestSpec spec) {
  Engine engine(config, seed);
  EXPECT_TRUE(engine.add_request(std::move(spec)));
  Finished out;
  double now = 0;
  while (engine.has_work()) {
    const auto r = engine.step(now);
    now += r.duration;
    for (const auto& e : r.events) {
      out.tokens.push_back(e.token);
      out.usage = e.usage;
    }
  }
  return out;
}

}  // namespace warden::engine::test
