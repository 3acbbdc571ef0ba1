#pragma once
// What the fuzz targets share: a check that aborts (so libFuzzer and the corpus replay both report it),
// and a reader that takes control bytes (flags, split points) from the front of an input.

#include "protocol/sse.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warden::fuzz {

[[noreturn]] inline void check_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, what);
  std::abort();
}

}  // namespace warden::fuzz

// An invariant of the code under test; on failure the input is the reproducer.
#define FUZZ_CHECK(cond)                                       \
  do {                                                         \
    if (!(cond)) {                                             \
      ::warden::fuzz::check_failed(#cond, __FILE__, __LINE__); \
    }                                                          \
  } while (0)

namespace warden::fuzz {

/// Reads control bytes from the front of a fuzz input; what is left is the payload.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  /// The next control byte (0 once the input is used up).
  std::uint8_t byte() {
    if (rest_.empty()) {
      return 0;
    }
    const auto b = static_cast<std::uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  /// The next `n` bytes (fewer at the end).
  std::string_view take(std::size_t n) {
    const std::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(out.size());
    return out;
  }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

/// Cuts `text` into pieces whose sizes come from `seed` (a tiny xorshift: the same seed, the same cuts).
/// Seed 0 cuts one byte at a time; larger seeds allow longer pieces.
inline std::vector<std::string_view> split(std::string_view text, std::uint8_t seed) {
  std::vector<std::string_view> pieces;
  std::uint32_t x = 0x9E3779B9u ^ seed;
  const std::size_t longest = 1 + static_cast<std::size_t>(seed) * 2;
  while (!text.empty()) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    const std::size_t n = seed == 0 ? 1 : 1 + x % longest;
    pieces.push_back(text.substr(0, n));
    text.remove_prefix(pieces.back().size());
  }
  return pieces;
}

/// The events (name and data) an SSE reader gets from `bytes` when they are not the start of a stream
/// (a BOM means nothing there): what a relay must keep the same.
inline std::vector<std::pair<std::string, std::string>> sse_events(std::string_view bytes) {
  protocol::SseParser p;
  std::vector<std::pair<std::string, std::string>> out;
  auto on = [&](const protocol::SseEvent& ev) { out.emplace_back(ev.event, ev.data); };
  (void)p.feed("\n", on);
  (void)p.feed(bytes, on);
  return out;
}

}  // namespace warden::fuzz
