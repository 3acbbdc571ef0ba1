#include "engine/tokenizer.hpp"

#include <xxhash.h>

#include <array>
#include <cassert>
#include <string>
#include <unordered_map>

namespace warden::engine {

namespace {

constexpr std::uint64_t kTokenizerSeed = 0x5157454e33544f4bULL;  // fixed: ids must never change silently

// Longest piece (bytes) kept whole; longer words and runs are cut into near-equal chunks. 7 keeps
// " the", " which", " return" whole and cuts long words like BPE does, giving ~4 chars/token on prose.
constexpr std::size_t kMaxWordPiece = 7;
constexpr std::size_t kMaxPunctPiece = 3;
constexpr std::size_t kMaxSpacePiece = 16;

struct Special {
  std::string_view text;
  TokenId id;
};
constexpr std::array<Special, 3> kSpecials{{
    {"<|im_start|>", kImStart},
    {"<|im_end|>", kImEnd},
    {"<|endoftext|>", kEndOfText},
}};

enum class CharClass { letter, digit, space, newline, other };

CharClass classify(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80 || c == '_') {
    return CharClass::letter;
  }
  if (c >= '0' && c <= '9') {
    return CharClass::digit;
  }
  if (c == '\n') {
    return CharClass::newline;
  }
  if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
    return CharClass::space;
  }
  return CharClass::other;
}

std::size_t run_end(std::string_view text, std::size_t i, CharClass cls) {
  while (i < text.size() && classify(static_cast<unsigned char>(text[i])) == cls) {
    ++i;
  }
  return i;
}

// The special marker written at `pos`, if any.
const Special* special_at(std::string_view text, std::size_t pos) {
  for (const auto& s : kSpecials) {
    if (text.substr(pos, s.text.size()) == s.text) {
      return &s;
    }
  }
  return nullptr;
}

// End of the run of `cls` starting at `i`; a punctuation run also ends where a special marker starts.
std::size_t piece_end(std::string_view text, std::size_t i, CharClass cls) {
  std::size_t end = run_end(text, i, cls);
  if (cls == CharClass::other) {
    for (std::size_t k = i + 1; k < end; ++k) {
      if (text[k] == '<' && special_at(text, k) != nullptr) {
        return k;
      }
    }
  }
  return end;
}

// Cuts [piece] into ceil(len / max) near-equal chunks and emits each.
template <class Emit>
void emit_chunked(std::string_view piece, std::size_t max, Emit& emit) {
  const std::size_t n = (piece.size() + max - 1) / max;
  const std::size_t base = piece.size() / n;
  std::size_t extra = piece.size() % n;
  std::size_t pos = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t len = base + (extra > 0 ? 1 : 0);
    if (extra > 0) {
      --extra;
    }
    emit(0, piece.substr(pos, len));
    pos += len;
  }
}

// The pre-tokenizer: calls emit(special_id, {}) for markers and newlines, emit(0, piece) for pieces.
template <class Emit>
void scan(std::string_view text, Emit&& emit) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '<') {
      if (const Special* s = special_at(text, i); s != nullptr) {
        emit(s->id, std::string_view{});
        i += s->text.size();
        continue;
      }
    }
    const CharClass cls = classify(c);
    if (cls == CharClass::newline) {
      const std::size_t end = run_end(text, i, cls);
      std::size_t n = end - i;
      for (; n >= 2; n -= 2) {
        emit(kDoubleNewline, std::string_view{});
      }
      if (n == 1) {
        emit(kNewline, std::string_view{});
      }
      i = end;
      continue;
    }
    if (cls == CharClass::space) {
      std::size_t end = run_end(text, i, cls);
      // The last space of a run joins a following word or punctuation (" word"), as in GPT-style BPE.
      if (end < text.size() && text[end - 1] == ' ') {
        const CharClass next = classify(static_cast<unsigned char>(text[end]));
        if (next == CharClass::letter || (next == CharClass::other && special_at(text, end) == nullptr)) {
          if (end - 1 > i) {
            emit_chunked(text.substr(i, end - 1 - i), kMaxSpacePiece, emit);
          }
          const std::size_t word_end = piece_end(text, end, next);
          emit_chunked(text.substr(end - 1, word_end - end + 1),
                       next == CharClass::letter ? kMaxWordPiece : kMaxPunctPiece + 1, emit);
          i = word_end;
          continue;
        }
      }
      emit_chunked(text.substr(i, end - i), kMaxSpacePiece, emit);
      i = end;
      continue;
    }
    if (cls == CharClass::digit) {
      // Qwen splits numbers into single digits.
      emit(0, text.substr(i, 1));
      ++i;
      continue;
    }
    const std::size_t end = piece_end(text, i, cls);
    emit_chunked(text.substr(i, end - i), cls == CharClass::letter ? kMaxWordPiece : kMaxPunctPiece, emit);
    i = end;
  }
}

TokenId piece_id(std::string_view piece) {
  return kFirstHashedId + static_cast<TokenId>(stable_hash(piece) % (kEndOfText - kFirstHashedId));
}

// Short common words for generated replies: every " word" and "Word" is a single piece (<= 7 bytes).
constexpr std::string_view kOutputWords[] = {
    "the",    "of",     "and",    "to",     "in",     "is",     "that",   "for",    "it",     "as",
    "with",   "be",     "on",     "this",   "are",    "by",     "from",   "or",     "an",     "which",
    "can",    "file",   "value",  "return", "error",  "module", "test",   "change", "build",  "config",
    "update", "cache",  "buffer", "stream", "token",  "result", "option", "parser", "client", "thread",
    "memory", "number", "string", "list",   "field",  "record", "event",  "queue",  "worker", "engine",
    "should", "would",  "could",  "before", "after",  "while",  "every",  "other",  "first",  "second",
    "last",   "next",   "small",  "large",  "simple", "check",  "read",   "write",  "open",   "close",
    "send",   "parse",  "render", "keep",   "move",   "split",  "merge",  "count",  "store",  "load",
    "we",     "you",    "they",   "our",    "their",  "its",    "when",   "where",  "how",    "why",
    "what",   "not",    "only",   "also",   "then",   "still",  "again",  "always", "never",  "line",
    "block",  "path",   "name",   "type",   "state",  "step",   "time",   "work",   "data",   "code",
    "user",   "input",  "output", "reason", "detail", "into",   "over",   "under",  "all",    "some",
    "each",   "more",   "most",   "many",   "few",    "here",   "there",  "now",    "so",     "but",
    "if",     "will",   "may",    "must",   "use",    "used",   "call",   "calls",  "fix",    "add",
    "new",    "old",    "same",   "one",    "two",    "three",  "way",    "case",   "part",   "key",
    "map",    "set",    "get",    "run",    "make",   "see",    "look",   "find",   "plan",   "next",
};

struct OutputVocab {
  std::vector<TokenId> lead;    // "Word" forms (position 0)
  std::vector<TokenId> follow;  // " word" forms
  TokenId period = 0;
  TokenId comma = 0;
  std::unordered_map<TokenId, std::string> text;  // id -> exact text, for every id token_text knows

  OutputVocab() {
    text.emplace(kImStart, "<|im_start|>");
    text.emplace(kImEnd, "<|im_end|>");
    text.emplace(kEndOfText, "<|endoftext|>");
    text.emplace(kNewline, "\n");
    text.emplace(kDoubleNewline, "\n\n");
    period = piece_id(".");
    comma = piece_id(",");
    text.emplace(period, ".");
    text.emplace(comma, ",");
    for (std::string_view w : kOutputWords) {
      std::string lead_text(w);
      lead_text[0] = static_cast<char>(lead_text[0] - 'a' + 'A');
      const std::string follow_text = " " + std::string(w);
      const TokenId a = piece_id(lead_text);
      const TokenId b = piece_id(follow_text);
      // Skip duplicates and (astronomically unlikely) hash collisions so the id -> text map is exact.
      if (a == b || text.contains(a) || text.contains(b)) {
        continue;
      }
      text.emplace(a, lead_text);
      text.emplace(b, follow_text);
      lead.push_back(a);
      follow.push_back(b);
    }
  }
};

const OutputVocab& output_vocab() {
  static const OutputVocab vocab;
  return vocab;
}

}  // namespace

std::uint64_t stable_hash(std::string_view bytes, std::uint64_t seed) {
  return XXH64(bytes.data(), bytes.size(), seed ^ kTokenizerSeed);
}

void tokenize_append(std::string_view text, Tokens& out) {
  out.reserve(out.size() + text.size() / 3 + 4);
  scan(text, [&](TokenId special, std::string_view piece) {
    out.push_back(special != 0 ? special : piece_id(piece));
  });
}

Tokens tokenize(std::string_view text) {
  Tokens out;
  tokenize_append(text, out);
  return out;
}

std::size_t count_tokens(std::string_view text) {
  std::size_t n = 0;
  scan(text, [&](TokenId, std::string_view) { ++n; });
  return n;
}

std::string_view token_text(TokenId id) {
  const auto& vocab = output_vocab();
  const auto it = vocab.text.find(id);
  return it == vocab.text.end() ? std::string_view{} : std::string_view{it->second};
}

std::string detokenize(std::span<const TokenId> tokens) {
  std::string out;
  for (TokenId t : tokens) {
    out.append(token_text(t));
  }
  return out;
}

std::size_t output_vocab_size() {
  return output_vocab().follow.size();
}

TokenId output_token(std::uint64_t random, std::size_t index) {
  const auto& vocab = output_vocab();
  if (index == 0) {
    return vocab.lead[random % vocab.lead.size()];
  }
  // Punctuation only at odd positions, so two marks never touch (".," would re-tokenize as one piece).
  const std::uint64_t r = random >> 8U;
  if (index % 2 == 1 && (random & 0xffU) < 32) {
    return (random & 0x100U) != 0 ? vocab.comma : vocab.period;
  }
  return vocab.follow[r % vocab.follow.size()];
}

}  // namespace warden::engine
