// Deterministic English-like text: the same (seed, stream) always yields the same bytes, on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace warden::workload {

// splitmix64: a tiny, well-mixed generator whose output is fixed by its seed (never std::rand/std::hash,
// whose output differs between standard libraries).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform in [0, bound); bound > 0.
  std::uint64_t below(std::uint64_t bound);

 private:
  std::uint64_t state_;
};

// Mixes a seed with labelled coordinates (what the text is for, session, turn) into one stream seed.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t tag, std::uint64_t a = 0, std::uint64_t b = 0);

// Appends sentences drawn from `rng` until `out` has grown by at least `chars` characters; the result ends
// at a sentence boundary followed by a newline, and paragraphs are separated by blank lines.
void append_text(std::string& out, SplitMix64& rng, std::size_t chars);

// Text of about `chars` characters from a stream seed.
std::string make_text(std::uint64_t stream, std::size_t chars);

}  // namespace warden::workload
