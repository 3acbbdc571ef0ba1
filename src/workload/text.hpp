// Deterministic English-like text: the same (seed, stream) always yields the same bytes, on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/splitmix.hpp"

namespace warden::workload {

using base::SplitMix64;

// Mixes a seed with labelled coordinates (what the text is for, session, turn) into one stream seed.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t tag, std::uint64_t a = 0, std::uint64_t b = 0);

// How text size is counted: characters, or tokens of some tokenizer. Must be additive over the units the
// generator appends (a word with its leading space, a punctuation mark, a line break).
using Measure = std::size_t (*)(std::string_view);
std::size_t count_chars(std::string_view text);

// Appends sentences drawn from `rng` until `out` has grown by at least `size` (as `measure` counts); it
// overshoots by at most a word and a period, ends with a newline, and separates paragraphs by blank lines.
void append_text(std::string& out, SplitMix64& rng, std::size_t size, Measure measure = count_chars);

// Text of `size` (as `measure` counts) from a stream seed.
std::string make_text(std::uint64_t stream, std::size_t size, Measure measure = count_chars);

}  // namespace warden::workload
