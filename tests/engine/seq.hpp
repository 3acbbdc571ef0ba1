// Test helper: distinct, predictable token sequences.
#pragma once

#include <numeric>

#include "engine/tokenizer.hpp"

namespace warden::engine::test {

// n consecutive ids starting at `start`.
inline Tokens seq(TokenId start, std::size_t n) {
  Tokens t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

}  // namespace warden::engine::test
