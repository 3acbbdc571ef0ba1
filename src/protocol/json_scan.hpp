#pragma once
// A validating JSON scanner that reports what it reads to a handler, without building a DOM or copying the
// text. As strict as Boost.JSON's parser with its defaults (RFC 8259: no comments, no trailing commas,
// UTF-8 validated, \u surrogates paired, exponents up to INT32_MAX), and iterative, so the depth limit needs
// no recursion. Strings are skipped 16 bytes at a time (SSE2; 8 elsewhere) while they hold no quote,
// backslash, control or non-ASCII byte, and their escapes are only checked: the handler decodes (unescape())
// the few it uses. That is what makes it several times faster than basic_parser on prompt text full of "\n"
// escapes. A template, so that the handler's calls inline into the scanning loop.
//
//   MyHandler h;  // satisfies JsonHandler
//   if (const Errc e = scan_json_object(body, 128, h); e != Errc::ok) { ... }
//
// The top level must be an object: another JSON value gives Errc::body_not_object, text that is not JSON
// (incl. invalid UTF-8, truncation, trailing bytes) Errc::malformed_json, more than max_depth open
// containers Errc::too_deep. Events already delivered before an error are not taken back.

#include "protocol/error.hpp"
#include "protocol/utf8.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace warden::protocol {

/// What the scanner calls, in document order. `depth` is the number of containers around a value (0 for
/// the top-level object, 1 for its members' values) and, for a key, the number of open containers
/// including the object that holds it (1 for a top-level member). `offset` is a byte offset into the text.
/// Each value is one on_value_begin(depth, offset of its first byte, its first byte), then either one
/// scalar event or on_object_begin / on_array_begin, the members (on_key, then the value) or elements, and
/// on_object_end / on_array_end; then on_value_end(depth, offset just past it).
/// Strings and keys arrive raw (the text between the quotes, escapes as sent); `escaped` says whether that
/// text holds a backslash, i.e. whether unescape() is needed to read it. Numbers that are integers fitting
/// an int64 arrive as on_int64, every other number as on_double (+-HUGE_VAL beyond a double's range).
template <class H>
concept JsonHandler = requires(H& h, std::string_view raw, bool b, std::int64_t i, double d, std::size_t n,
                               char c) {
  h.on_value_begin(n, n, c);
  h.on_value_end(n, n);
  h.on_object_begin();
  h.on_object_end();
  h.on_array_begin();
  h.on_array_end();
  h.on_key(raw, b, n);
  h.on_string(raw, b);
  h.on_int64(i);
  h.on_double(d);
  h.on_bool(b);
  h.on_null();
};

/// Decodes the escapes of a string or key the scanner has validated (raw text between the quotes) into
/// `out` (replacing its contents).
void unescape(std::string_view raw, std::string& out);

namespace detail {

/// Four hex digits at p (p + 4 <= end checked by the caller), or -1.
inline int hex4(const char* p) noexcept {
  int v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = p[i];
    int d = -1;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    }
    if (d < 0) {
      return -1;
    }
    v = (v << 4) | d;
  }
  return v;
}

/// The first byte in [p, end) that is a quote, a backslash, a control byte or not ASCII (or end): the
/// stretch of a string that needs no look. Prompt text is mostly such stretches between "\n" escapes.
inline const char* skip_plain(const char* p, const char* end) noexcept {
#if defined(__SSE2__)
  // 16 bytes per step. A signed compare with 0x20 catches control bytes and, being negative as signed
  // bytes, every byte from 0x80 up.
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                         _mm_cmpgt_epi8(space, v));
    const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(special));
    if (mask != 0) {
      return p + std::countr_zero(mask);
    }
    p += 16;
  }
#endif
  // 8 bytes per step (SWAR), then byte by byte.
  constexpr std::uint64_t ones = 0x0101010101010101ull;
  constexpr std::uint64_t highs = 0x8080808080808080ull;
  while (end - p >= 8) {
    std::uint64_t v = 0;
    std::memcpy(&v, p, sizeof v);
    const std::uint64_t q = v ^ (ones * '"');
    const std::uint64_t b = v ^ (ones * '\\');
    const std::uint64_t special =
        (((q - ones) & ~q) | ((b - ones) & ~b) | ((v - ones * 0x20) & ~v) | v) & highs;
    if (special != 0) {
      break;
    }
    p += 8;
  }
  return p;
}

template <JsonHandler H>
class JsonScanner {
 public:
  JsonScanner(std::string_view text, std::size_t max_depth, H& h)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), max_depth_(max_depth), h_(h) {}

  Errc run() {
    skip_ws();
    if (p_ == end_) {
      return Errc::malformed_json;
    }
    if (*p_ != '{') {
      const char c = *p_;
      const bool value_start =
          c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n';
      return value_start ? Errc::body_not_object : Errc::malformed_json;
    }
    while (true) {
      // A value starts here.
      skip_ws();
      if (p_ == end_) {
        return Errc::malformed_json;
      }
      const char c = *p_;
      h_.on_value_begin(stack_.size(), offset(), c);
      if (c == '{' || c == '[') {
        if (stack_.size() >= max_depth_) {
          return Errc::too_deep;
        }
        ++p_;
        stack_.push_back(c);
        if (c == '{') {
          h_.on_object_begin();
        } else {
          h_.on_array_begin();
        }
        skip_ws();
        if (p_ != end_ && *p_ != (c == '{' ? '}' : ']')) {
          if (c == '{') {
            if (const Errc e = member_key(); e != Errc::ok) {
              return e;
            }
          }
          continue;  // the first member's value or the first element
        }
        // An empty container: closed below.
      } else if (const Errc e = scalar(c); e != Errc::ok) {
        return e;
      } else {
        h_.on_value_end(stack_.size(), offset());
      }
      bool done = false;
      if (const Errc e = close_containers(done); e != Errc::ok || done) {
        return e;
      }
    }
  }

 private:
  std::size_t offset() const noexcept { return static_cast<std::size_t>(p_ - begin_); }

  void skip_ws() noexcept {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) {
      ++p_;
    }
  }

  // p_ at the first byte `c` of a value that is not a container.
  Errc scalar(char c) {
    if (c == '"') {
      std::string_view raw;
      bool escaped = false;
      if (const Errc e = scan_string(raw, escaped); e != Errc::ok) {
        return e;
      }
      h_.on_string(raw, escaped);
      return Errc::ok;
    }
    if (c == 't' || c == 'f' || c == 'n') {
      return literal();
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      return number();
    }
    return Errc::malformed_json;
  }

  // After a value: closes containers until a comma leads to the next member or element, or until the
  // top-level object has closed (`done`).
  Errc close_containers(bool& done) {
    while (true) {
      skip_ws();
      if (stack_.empty()) {
        done = true;
        return p_ == end_ ? Errc::ok : Errc::malformed_json;
      }
      if (p_ == end_) {
        return Errc::malformed_json;
      }
      if (*p_ == ',') {
        ++p_;
        return stack_.back() == '{' ? member_key() : Errc::ok;
      }
      const bool object = stack_.back() == '{';
      if (*p_ != (object ? '}' : ']')) {
        return Errc::malformed_json;
      }
      ++p_;
      stack_.pop_back();
      if (object) {
        h_.on_object_end();
      } else {
        h_.on_array_end();
      }
      h_.on_value_end(stack_.size(), offset());
    }
  }

  // At a member: "key" ':' (whitespace allowed around).
  Errc member_key() {
    skip_ws();
    if (p_ == end_ || *p_ != '"') {
      return Errc::malformed_json;
    }
    std::string_view raw;
    bool escaped = false;
    if (const Errc e = scan_string(raw, escaped); e != Errc::ok) {
      return e;
    }
    h_.on_key(raw, escaped, stack_.size());
    skip_ws();
    if (p_ == end_ || *p_ != ':') {
      return Errc::malformed_json;
    }
    ++p_;
    return Errc::ok;
  }

  // p_ at the opening quote. On success raw is the text between the quotes and p_ is past the closing one.
  Errc scan_string(std::string_view& raw, bool& escaped) {
    ++p_;
    const char* start = p_;
    escaped = false;
    while (true) {
      p_ = skip_plain(p_, end_);
      if (p_ == end_) {
        return Errc::malformed_json;
      }
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        raw = std::string_view(start, static_cast<std::size_t>(p_ - start));
        ++p_;
        return Errc::ok;
      }
      if (c == '\\') {
        escaped = true;
        if (const Errc e = escape(); e != Errc::ok) {
          return e;
        }
        continue;
      }
      if (c < 0x20) {
        return Errc::malformed_json;
      }
      if (c < 0x80) {
        ++p_;
        continue;
      }
      const std::size_t n = utf8_sequence(reinterpret_cast<const unsigned char*>(p_),
                                          reinterpret_cast<const unsigned char*>(end_));
      if (n == 0) {
        return Errc::malformed_json;
      }
      p_ += n;
    }
  }

  // p_ at a backslash inside a string.
  Errc escape() {
    if (end_ - p_ < 2) {
      return Errc::malformed_json;
    }
    const char e = p_[1];
    if (e != 'u') {
      if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
        p_ += 2;
        return Errc::ok;
      }
      return Errc::malformed_json;
    }
    if (end_ - p_ < 6) {
      return Errc::malformed_json;
    }
    const int u = hex4(p_ + 2);
    p_ += 6;
    if (u < 0 || (u >= 0xDC00 && u <= 0xDFFF)) {  // a trailing surrogate cannot come first
      return Errc::malformed_json;
    }
    if (u >= 0xD800 && u <= 0xDBFF) {  // a leading surrogate needs its trailing half
      if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') {
        return Errc::malformed_json;
      }
      const int lo = hex4(p_ + 2);
      if (lo < 0xDC00 || lo > 0xDFFF) {
        return Errc::malformed_json;
      }
      p_ += 6;
    }
    return Errc::ok;
  }

  Errc literal() {
    for (const std::string_view word :
         {std::string_view("true"), std::string_view("false"), std::string_view("null")}) {
      if (static_cast<std::size_t>(end_ - p_) >= word.size() &&
          std::memcmp(p_, word.data(), word.size()) == 0) {
        p_ += word.size();
        if (word == "null") {
          h_.on_null();
        } else {
          h_.on_bool(word == "true");
        }
        return Errc::ok;
      }
    }
    return Errc::malformed_json;
  }

  static bool digit(char c) noexcept { return c >= '0' && c <= '9'; }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? ; what follows is checked by the caller.
  Errc number() {
    const char* start = p_;
    if (*p_ == '-') {
      ++p_;
    }
    if (p_ == end_ || !digit(*p_)) {
      return Errc::malformed_json;
    }
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ != end_ && digit(*p_)) {
        ++p_;
      }
    }
    bool integer = true;
    if (p_ != end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (p_ == end_ || !digit(*p_)) {
        return Errc::malformed_json;
      }
      while (p_ != end_ && digit(*p_)) {
        ++p_;
      }
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      if (const Errc e = exponent(); e != Errc::ok) {
        return e;
      }
    }
    if (integer) {
      std::int64_t v = 0;
      const auto [ptr, ec] = std::from_chars(start, p_, v);
      if (ec == std::errc() && ptr == p_) {
        h_.on_int64(v);
        return Errc::ok;
      }
    }
    double d = 0.0;
    const auto [ptr, ec] = std::from_chars(start, p_, d);
    if (ec == std::errc::result_out_of_range) {
      d = *start == '-' ? -HUGE_VAL : HUGE_VAL;  // valid JSON, just beyond a double
    }
    (void)ptr;
    h_.on_double(d);
    return Errc::ok;
  }

  // p_ at the 'e' or 'E' of a number.
  Errc exponent() {
    ++p_;
    if (p_ != end_ && (*p_ == '+' || *p_ == '-')) {
      ++p_;
    }
    if (p_ == end_ || !digit(*p_)) {
      return Errc::malformed_json;
    }
    std::int64_t value = 0;
    while (p_ != end_ && digit(*p_)) {
      value = value * 10 + (*p_ - '0');
      if (value > INT32_MAX) {  // Boost.JSON rejects such exponents too
        return Errc::malformed_json;
      }
      ++p_;
    }
    return Errc::ok;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::size_t max_depth_;
  H& h_;
  std::string stack_;  // '{' or '[' per open container
};

}  // namespace detail

/// Scans `text`, which must be one JSON object, delivering its events to `handler`; see the header comment.
template <JsonHandler H>
Errc scan_json_object(std::string_view text, std::size_t max_depth, H& handler) {
  return detail::JsonScanner<H>(text, max_depth, handler).run();
}

}  // namespace warden::protocol
