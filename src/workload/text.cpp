#include "workload/text.hpp"

#include <xxhash.h>

#include <array>
#include <string_view>

namespace warden::workload {

namespace {

// Common words of varied length, so the text reads like prose to a chars-per-token tokenizer and has a
// realistic spread of word lengths.
constexpr std::string_view kWords[] = {
    "the",       "of",         "and",        "to",          "in",        "is",         "that",
    "for",       "it",         "as",         "with",        "be",        "on",         "this",
    "are",       "by",         "from",       "or",          "an",        "which",      "can",
    "file",      "function",   "request",    "server",      "value",     "return",     "error",
    "module",    "test",       "change",     "build",       "config",    "update",     "cache",
    "replica",   "session",    "handler",    "buffer",      "stream",    "token",      "result",
    "option",    "parser",     "client",     "thread",      "memory",    "number",     "string",
    "list",      "field",      "record",     "event",       "queue",     "worker",     "engine",
    "should",    "would",      "could",      "before",      "after",     "because",    "while",
    "every",     "other",      "first",      "second",      "last",      "next",       "small",
    "large",     "simple",     "careful",    "current",     "previous",  "default",    "explicit",
    "check",     "read",       "write",      "open",        "close",     "send",       "receive",
    "parse",     "render",     "measure",    "compare",     "replace",   "remove",     "create",
    "keep",      "move",       "split",      "merge",       "count",     "store",      "load",
    "we",        "you",        "they",       "it",          "our",       "their",      "its",
    "when",      "where",      "how",        "why",         "what",      "not",        "only",
    "also",      "then",       "still",      "already",     "again",     "always",     "never",
    "directory", "repository", "dependency", "interface",   "benchmark", "allocation", "connection",
    "timeout",   "latency",    "throughput", "performance", "behaviour", "structure",  "condition",
    "line",      "block",      "path",       "name",        "type",      "state",      "step",
    "time",      "work",       "data",       "code",        "user",      "input",      "output",
    "problem",   "question",   "answer",     "reason",      "example",   "detail",     "summary",
    "into",      "over",       "under",      "between",     "without",   "within",     "through",
    "all",       "some",       "each",       "more",        "most",      "many",       "few",
};

}  // namespace

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t tag, std::uint64_t a, std::uint64_t b) {
  // Fixed little-endian layout so the hash does not depend on the host's byte order.
  std::array<unsigned char, 32> bytes{};
  const std::array<std::uint64_t, 4> parts{seed, tag, a, b};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    for (std::size_t j = 0; j < 8; ++j) {
      bytes[i * 8 + j] = static_cast<unsigned char>((parts[i] >> (8 * j)) & 0xFFU);
    }
  }
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::size_t count_chars(std::string_view text) {
  return text.size();
}

void append_text(std::string& out, SplitMix64& rng, std::size_t size, Measure measure) {
  std::size_t used = 0;
  // Text is appended in units the tokenizer splits on (a word with its leading space, a punctuation mark,
  // a line break), so the sum of the units' sizes is the size of the whole.
  auto add = [&](std::string_view unit) {
    out.append(unit);
    used += measure(unit);
  };
  std::string unit;
  bool paragraph_start = true;
  std::size_t sentences_in_paragraph = 0;
  while (used < size) {
    const std::size_t words = 6 + rng.below(14);
    for (std::size_t w = 0; w < words; ++w) {
      const std::string_view word = kWords[rng.below(std::size(kWords))];
      unit.clear();
      if (!paragraph_start) {
        unit.push_back(' ');
      }
      paragraph_start = false;
      if (w == 0) {
        unit.push_back(static_cast<char>(word[0] - 'a' + 'A'));
        unit.append(word.substr(1));
      } else {
        unit.append(word);
      }
      add(unit);
      // Ending the sentence as soon as the target is reached keeps the overshoot to a word and a period,
      // so even short messages land close to their target.
      if (used + 2 >= size) {
        break;
      }
      // An occasional comma keeps the punctuation density of real prose.
      if (w > 0 && w + 1 < words && rng.below(9) == 0) {
        add(",");
      }
    }
    add(".");
    ++sentences_in_paragraph;
    if (used + 1 >= size) {
      add("\n");
    } else if (sentences_in_paragraph >= 3 + rng.below(4)) {
      add("\n\n");
      paragraph_start = true;
      sentences_in_paragraph = 0;
    }
  }
}

std::string make_text(std::uint64_t stream, std::size_t size, Measure measure) {
  std::string out;
  SplitMix64 rng(stream);
  append_text(out, rng, size, measure);
  return out;
}

}  // namespace warden::workload
