#include "protocol/request.hpp"

#include "protocol/utf8.hpp"

#include <boost/json/parse.hpp>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t by value: no heap allocation per request
#include <xxhash.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/trim.hpp"

namespace warden::protocol {

namespace {

using boost::system::error_code;

constexpr std::size_t kMaxKeyBytes = 256;         // longer session keys are replaced by their hash
constexpr std::size_t kPromptBudgetBytes = 4096;  // completions prompt / responses string input
constexpr std::size_t kMaxCaptureBytes = 1u << 20;

char lower(char c) noexcept {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

std::string hex16(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = digits[v & 0xF];
    v >>= 4;
  }
  return out;
}

std::optional<std::string> normalize_key(std::string_view raw) {
  const std::string_view v = base::trim(raw);
  if (v.empty()) {
    return std::nullopt;
  }
  if (v.size() > kMaxKeyBytes) {
    return "h:" + hex16(XXH3_64bits(v.data(), v.size()));
  }
  return std::string(v);
}

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Four hex digits at p (p + 4 <= end checked by the caller), or -1.
int hex4(const char* p) noexcept {
  int v = 0;
  for (int i = 0; i < 4; ++i) {
    const int d = hex_value(p[i]);
    if (d < 0) {
      return -1;
    }
    v = (v << 4) | d;
  }
  return v;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes the escapes of a string the scanner has validated.
void unescape(std::string_view raw, std::string& out) {
  out.clear();
  out.reserve(raw.size());
  std::size_t i = 0;
  while (i < raw.size()) {
    const std::size_t bs = raw.find('\\', i);
    out.append(raw.substr(i, bs - i));
    if (bs == std::string_view::npos || bs + 1 >= raw.size()) {
      return;
    }
    const char e = raw[bs + 1];
    i = bs + 2;
    switch (e) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        if (i + 4 > raw.size()) {
          return;
        }
        std::uint32_t cp = static_cast<std::uint32_t>(hex4(raw.data() + i));
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= raw.size()) {
          const auto lo = static_cast<std::uint32_t>(hex4(raw.data() + i + 2));
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        }
        append_utf8(out, cp);
        break;
      }
      default:  // '"', '\\', '/'
        out += e;
        break;
    }
  }
}

// Which top-level member the parser is inside.
enum class Field : std::uint8_t {
  other,
  model,
  stream,
  stream_options,
  max_tokens,
  prompt_cache_key,
  metadata,
  // The prompt parts, in the order their digests are combined into the fingerprint.
  system,
  tools,
  instructions,
  messages,
  input,
  prompt,
};
constexpr std::size_t kFirstPart = static_cast<std::size_t>(Field::system);
constexpr std::size_t kParts = static_cast<std::size_t>(Field::prompt) - kFirstPart + 1;

bool is_prompt_part(Field f) noexcept {
  return static_cast<std::size_t>(f) >= kFirstPart;
}

Field classify(std::string_view key) noexcept {
  static constexpr std::pair<std::string_view, Field> table[] = {
      {"model", Field::model},
      {"stream", Field::stream},
      {"stream_options", Field::stream_options},
      {"max_tokens", Field::max_tokens},
      {"max_completion_tokens", Field::max_tokens},
      {"max_output_tokens", Field::max_tokens},
      {"prompt_cache_key", Field::prompt_cache_key},
      {"metadata", Field::metadata},
      {"system", Field::system},
      {"tools", Field::tools},
      {"instructions", Field::instructions},
      {"messages", Field::messages},
      {"input", Field::input},
      {"prompt", Field::prompt},
  };
  for (const auto& [name, field] : table) {
    if (key == name) {
      return field;
    }
  }
  return Field::other;
}

enum class Kind { object, array, string, number, boolean, null };

// SAX handler for boost::json::basic_parser. Depth = number of open containers: the top-level object's
// members sit at depth 1, the elements of a top-level array member at depth 2, their members at depth 3.
class Handler {
 public:
  explicit Handler(bool fingerprint) : fingerprint_(fingerprint) {}

  void on_object_begin() {
    value_begin(Kind::object);
    emit_tag('{');
    ++depth_;
  }
  void on_object_end() {
    --depth_;
    emit_tag('}');
    value_end();
  }
  void on_array_begin() {
    value_begin(Kind::array);
    emit_tag('[');
    ++depth_;
  }
  void on_array_end() {
    --depth_;
    emit_tag(']');
    value_end();
  }

  // `raw` is the key's text between the quotes; `escaped` says whether it holds backslash escapes.
  void on_key(std::string_view raw, bool escaped) {
    if (escaped) {
      unescape(raw, key_);
      raw = key_;
    }
    on_full_key(raw);
  }

  void on_string(std::string_view raw, bool escaped) {
    value_begin(Kind::string);
    emit_tag('s');
    // Unescape only when the text is used (captured or hashed): hashing the decoded text keeps the
    // fingerprint independent of how a client spells its escapes.
    std::string_view text = raw;
    if (escaped && (capture_ != Capture::none || emitting())) {
      unescape(raw, scratch_);
      text = scratch_;
    }
    string_bytes(text, raw.size());
    if (!budgeted_) {  // a budgeted part hashes a byte prefix only: no length that would change per turn
      emit_u64(text.size());
    }
    string_end();
    value_end();
  }

  void on_int64(std::int64_t v) {
    number([&] {
      if (depth_ == 1 && field_ == Field::max_tokens) {
        max_tokens_ = v;
      }
      return static_cast<std::uint64_t>(v);
    });
  }
  void on_double(double v) {
    number([&] {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      return bits;
    });
  }
  void on_bool(bool b) {
    value_begin(Kind::boolean);
    if (depth_ == 1 && field_ == Field::stream) {
      stream_ = b;
    } else if (depth_ == 2 && field_ == Field::stream_options && key2_ == "include_usage") {
      include_usage_ = b;
    }
    emit_tag(b ? 't' : 'f');
    value_end();
  }
  void on_null() {
    value_begin(Kind::null);
    emit_tag('n');
    value_end();
  }

  // Results.
  enum class ModelState { absent, string, not_string };
  ModelState model_state_ = ModelState::absent;
  std::string model_;
  bool stream_ = false;
  bool include_usage_ = false;
  std::optional<std::int64_t> max_tokens_;
  std::optional<std::string> prompt_cache_key_;
  std::optional<std::string> user_id_;
  std::uint64_t prompt_bytes_ = 0;

  // The fingerprint, or nullopt if no prompt part had any content.
  std::optional<std::uint64_t> fingerprint() const {
    if (!fingerprint_ || hashed_values_ == 0) {
      return std::nullopt;
    }
    std::array<std::uint64_t, 2 * kParts> words{};
    for (std::size_t i = 0; i < kParts; ++i) {
      words[2 * i] = part_present_[i] ? 1 : 0;
      words[2 * i + 1] = part_digest_[i];
    }
    return XXH3_64bits(words.data(), sizeof words);
  }

 private:
  enum class Target { none, part, element };
  enum class Capture { none, model, prompt_cache_key, user_id, role };

  template <class F>
  void number(F&& value_bits) {
    value_begin(Kind::number);
    const std::uint64_t bits = value_bits();
    if (counting_) {
      prompt_bytes_ += 4;  // a token id (completions) or a number in a schema: about one token
    }
    if (emitting()) {
      ++hashed_values_;
    }
    emit_tag('i');
    emit_u64(bits);
    value_end();
  }

  void value_begin(Kind kind) {
    if (depth_ == 0) {
      return;  // the scanner only lets a top-level object through
    }
    if (pending_skip_) {  // the value of a "cache_control" member: not part of the fingerprint
      pending_skip_ = false;
      skipping_ = true;
      skip_depth_ = depth_;
    }
    if (depth_ == 1) {
      member_begin(kind);
    } else if (depth_ == 2 && elements_) {
      element_begin();
    }
    capture_ = Capture::none;
    if (kind == Kind::string) {
      if (depth_ == 1 && field_ == Field::model) {
        capture_ = Capture::model;
      } else if (depth_ == 1 && field_ == Field::prompt_cache_key) {
        capture_ = Capture::prompt_cache_key;
      } else if (depth_ == 2 && field_ == Field::metadata && key2_ == "user_id") {
        capture_ = Capture::user_id;
      } else if (depth_ == 3 && elements_ && role_key_) {
        capture_ = Capture::role;
      }
      str_.clear();
    }
  }

  void member_begin(Kind kind) {
    switch (field_) {
      case Field::model:
        model_state_ = kind == Kind::string ? ModelState::string : ModelState::not_string;
        model_.clear();
        break;
      case Field::stream:
        stream_ = false;
        break;
      case Field::stream_options:
        include_usage_ = false;
        break;
      case Field::max_tokens:
        max_tokens_.reset();
        break;
      case Field::prompt_cache_key:
        prompt_cache_key_.reset();
        break;
      case Field::metadata:
        user_id_.reset();
        break;
      default:
        break;
    }
    if (!is_prompt_part(field_)) {
      return;
    }
    counting_ = true;
    elements_ = kind == Kind::array && (field_ == Field::messages || field_ == Field::input);
    budgeted_ =
        kind == Kind::string ? (field_ == Field::input || field_ == Field::prompt) : field_ == Field::prompt;
    budget_ = kPromptBudgetBytes;
    first_user_seen_ = false;
    if (fingerprint_) {
      XXH3_64bits_reset(&part_);
      target_ = elements_ ? Target::none : Target::part;  // element mode hashes elements, not brackets
    }
  }

  void element_begin() {
    role_.clear();
    if (fingerprint_ && !first_user_seen_) {
      XXH3_64bits_reset(&element_);
      target_ = Target::element;
    } else {
      target_ = Target::none;
    }
  }

  void value_end() {
    if (skipping_ && depth_ == skip_depth_) {
      skipping_ = false;
    }
    if (depth_ == 2 && elements_) {
      if (target_ == Target::element) {
        const std::uint64_t d = XXH3_64bits_digest(&element_);
        XXH3_64bits_update(&part_, &d, sizeof d);
        if (role_ == "user") {
          first_user_seen_ = true;
        }
      }
      target_ = Target::none;
    } else if (depth_ == 1) {
      if (is_prompt_part(field_)) {
        const std::size_t i = static_cast<std::size_t>(field_) - kFirstPart;
        if (fingerprint_) {
          part_digest_[i] = XXH3_64bits_digest(&part_);
          part_present_[i] = true;
        }
      }
      target_ = Target::none;
      counting_ = false;
      elements_ = false;
      budgeted_ = false;
      skipping_ = false;
      pending_skip_ = false;
    }
  }

  void on_full_key(std::string_view key) {
    if (depth_ == 1) {
      field_ = classify(key);
      return;
    }
    if (depth_ == 2 && (field_ == Field::stream_options || field_ == Field::metadata)) {
      key2_.assign(key.substr(0, 64));
    }
    if (depth_ == 3) {
      role_key_ = elements_ && key == "role";
    }
    if (counting_) {
      prompt_bytes_ += key.size();
    }
    if (emitting()) {
      if (key == "cache_control") {
        pending_skip_ = true;
        return;
      }
      emit_tag('k');
      emit(key.data(), key.size());
      emit_u64(key.size());
    }
  }

  // `raw_size`: the escaped length, counted for the estimate whether or not the text was decoded.
  void string_bytes(std::string_view s, std::size_t raw_size) {
    if (counting_) {
      prompt_bytes_ += raw_size;
    }
    if (capture_ != Capture::none && str_.size() + s.size() <= kMaxCaptureBytes) {
      str_.append(s);
    }
    if (emitting() && !s.empty()) {
      ++hashed_values_;
      emit(s.data(), s.size());
    }
  }

  void string_end() {
    switch (capture_) {
      case Capture::model:
        model_ = std::move(str_);
        break;
      case Capture::prompt_cache_key:
        prompt_cache_key_ = std::move(str_);
        break;
      case Capture::user_id:
        user_id_ = std::move(str_);
        break;
      case Capture::role:
        role_ = std::move(str_);
        break;
      case Capture::none:
        break;
    }
    str_.clear();
    capture_ = Capture::none;
  }

  bool emitting() const noexcept { return target_ != Target::none && !skipping_; }

  void emit(const void* p, std::size_t n) {
    if (!emitting()) {
      return;
    }
    if (budgeted_) {
      n = std::min(n, budget_);
      budget_ -= n;
    }
    if (n == 0) {
      return;
    }
    XXH3_64bits_update(target_ == Target::element ? &element_ : &part_, p, n);
  }
  void emit_tag(char tag) { emit(&tag, 1); }
  void emit_u64(std::uint64_t v) { emit(&v, sizeof v); }

  const bool fingerprint_;
  int depth_ = 0;
  Field field_ = Field::other;
  std::string key_;      // an unescaped key
  std::string scratch_;  // an unescaped string value
  std::string key2_;     // last key at depth 2 (inside stream_options / metadata)
  bool role_key_ = false;
  Capture capture_ = Capture::none;
  std::string str_;
  std::string role_;

  // Prompt-part hashing.
  bool counting_ = false;
  bool elements_ = false;  // the current member is an array of messages / input items
  bool first_user_seen_ = false;
  bool budgeted_ = false;
  std::size_t budget_ = 0;
  bool pending_skip_ = false;
  bool skipping_ = false;
  int skip_depth_ = 0;
  Target target_ = Target::none;
  std::uint64_t hashed_values_ = 0;
  std::array<std::uint64_t, kParts> part_digest_{};
  std::array<bool, kParts> part_present_{};
  // Set by XXH3_64bits_reset() before each use: not zeroed up front (over a KiB per request).
  XXH3_state_t part_;
  XXH3_state_t element_;
};

// A validating JSON scanner that drives the Handler. As strict as Boost.JSON's defaults (RFC 8259: no
// comments, no trailing commas, UTF-8 validated, \u surrogates paired), iterative so the depth limit needs
// no recursion. Strings are skipped 16 bytes at a time (SSE2; 8 elsewhere) while they hold no quote,
// backslash, control or non-ASCII byte, and escapes are decoded only where the Handler uses the text: this is
// what makes it several times faster than basic_parser on prompt text full of "\n" escapes.
class JsonScanner {
 public:
  JsonScanner(std::string_view text, std::size_t max_depth, Handler& h, BodyLayout& layout)
      : begin_(text.data()),
        p_(text.data()),
        end_(text.data() + text.size()),
        max_depth_(max_depth),
        h_(h),
        layout_(layout) {}

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
      value_begin(c);
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
      } else if (c == '"') {
        std::string_view raw;
        bool escaped = false;
        if (const Errc e = scan_string(raw, escaped); e != Errc::ok) {
          return e;
        }
        h_.on_string(raw, escaped);
      } else if (c == 't' || c == 'f' || c == 'n') {
        if (const Errc e = literal(); e != Errc::ok) {
          return e;
        }
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        if (const Errc e = number(); e != Errc::ok) {
          return e;
        }
      } else {
        return Errc::malformed_json;
      }
      if (c != '{' && c != '[') {
        value_end(stack_.size());
      }
      // After a value: close containers until a comma leads to the next member or element.
      while (true) {
        skip_ws();
        if (stack_.empty()) {
          return p_ == end_ ? Errc::ok : Errc::malformed_json;
        }
        if (p_ == end_) {
          return Errc::malformed_json;
        }
        if (*p_ == ',') {
          ++p_;
          if (stack_.back() == '{') {
            if (const Errc e = member_key(); e != Errc::ok) {
              return e;
            }
          }
          break;
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
        value_end(stack_.size());
      }
    }
  }

 private:
  void skip_ws() noexcept {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) {
      ++p_;
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
    if (stack_.size() <= 2) {
      layout_key(raw, escaped);
    }
    h_.on_key(raw, escaped);
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
      const std::size_t n = detail::utf8_sequence(reinterpret_cast<const unsigned char*>(p_),
                                                  reinterpret_cast<const unsigned char*>(end_));
      if (n == 0) {
        return Errc::malformed_json;
      }
      p_ += n;
    }
  }

  // The first byte in [p, end) that is a quote, a backslash, a control byte or not ASCII (or end): the
  // stretch of a string that needs no look. Prompt text is mostly such stretches between "\n" escapes.
  static const char* skip_plain(const char* p, const char* end) noexcept {
#if defined(__SSE2__)
    // 16 bytes per step. A signed compare with 0x20 catches control bytes and, being negative as signed
    // bytes, every byte from 0x80 up.
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i special = _mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), _mm_cmpgt_epi8(space, v));
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

  static bool digit(char c) noexcept {
    return c >= '0' && c <= '9';
  }

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
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) {
        ++p_;
      }
      if (p_ == end_ || !digit(*p_)) {
        return Errc::malformed_json;
      }
      std::int64_t exponent = 0;
      while (p_ != end_ && digit(*p_)) {
        exponent = exponent * 10 + (*p_ - '0');
        if (exponent > INT32_MAX) {  // Boost.JSON rejects such exponents too
          return Errc::malformed_json;
        }
        ++p_;
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

  // The layout: members of the top-level object (depth 1) and of its "stream_options" object (depth 2).
  enum class Key : std::uint8_t { other, model, stream, stream_options, include_usage };

  void layout_key(std::string_view raw, bool escaped) {
    std::string_view key = raw;
    if (escaped) {
      unescape(raw, key_text_);
      key = key_text_;
    }
    Key k = Key::other;
    if (stack_.size() == 1) {
      k = key == "model"            ? Key::model
          : key == "stream"         ? Key::stream
          : key == "stream_options" ? Key::stream_options
                                    : Key::other;
    } else if (in_stream_options_ && stack_[1] == '{') {
      k = key == "include_usage" ? Key::include_usage : Key::other;
    }
    key_[stack_.size()] = k;
  }
  void value_begin(char c) {
    const std::size_t depth = stack_.size();
    if (depth == 1 || depth == 2) {
      value_start_[depth] = static_cast<std::size_t>(p_ - begin_);
    }
    if (depth == 1) {
      in_stream_options_ = key_[1] == Key::stream_options && c == '{';
      if (key_[1] == Key::stream_options) {
        // A later "stream_options" replaces an earlier one: only the last one's inside counts.
        layout_.include_usage.reset();
        layout_.stream_options_members = 0;
        layout_.stream_options_last_end = 0;
      }
    }
  }
  // A value just ended; `depth` is the number of containers around it.
  void value_end(std::size_t depth) {
    if (depth != 1 && depth != 2) {
      return;
    }
    const ByteSpan span{value_start_[depth], static_cast<std::size_t>(p_ - begin_)};
    if (depth == 1) {
      ++layout_.top_members;
      layout_.last_member_end = span.end;
      switch (key_[1]) {
        case Key::model:
          layout_.model.push_back(span);
          break;
        case Key::stream:
          layout_.stream = span;
          break;
        case Key::stream_options:
          layout_.stream_options = span;
          in_stream_options_ = false;
          break;
        default:
          break;
      }
    } else if (in_stream_options_ && stack_[1] == '{') {
      ++layout_.stream_options_members;
      layout_.stream_options_last_end = span.end;
      if (key_[2] == Key::include_usage) {
        layout_.include_usage = span;
      }
    }
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::size_t max_depth_;
  Handler& h_;
  BodyLayout& layout_;
  std::string stack_;  // '{' or '[' per open container
  std::array<Key, 3> key_{};
  std::array<std::size_t, 3> value_start_{};
  bool in_stream_options_ = false;  // inside the value of a top-level "stream_options" object
  std::string key_text_;
};

}  // namespace

HeaderLookup::HeaderLookup(std::span<const HeaderField> fields) noexcept : fields_(fields) {}

std::optional<std::string_view> HeaderLookup::find(std::string_view name) const {
  if (fn_ != nullptr) {
    return fn_(ctx_, name);
  }
  for (const auto& f : fields_) {
    if (iequals(f.name, name)) {
      return f.value;
    }
  }
  return std::nullopt;
}

std::string_view to_string(SessionSource s) noexcept {
  switch (s) {
    case SessionSource::warden_header:
      return "warden_header";
    case SessionSource::claude_code_header:
      return "claude_code_header";
    case SessionSource::codex_header:
      return "codex_header";
    case SessionSource::prompt_cache_key:
      return "prompt_cache_key";
    case SessionSource::metadata_user_id:
      return "metadata_user_id";
    case SessionSource::fingerprint:
      return "fingerprint";
    case SessionSource::none:
      return "none";
  }
  return "none";
}

ClientPin parse_pin(std::optional<std::string_view> value, PinSource source) noexcept {
  ClientPin pin;
  if (!value) {
    return pin;
  }
  pin.source = source;
  pin.state = PinState::invalid;
  const std::string_view v = base::trim(*value);
  // Up to 9 digits: no overflow, and far beyond any replica count.
  if (v.empty() || v.size() > 9 ||
      !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return pin;
  }
  std::int64_t n = 0;
  for (char c : v) {
    n = n * 10 + (c - '0');
  }
  pin.state = PinState::valid;
  pin.replica = n;
  return pin;
}

std::optional<std::string> session_from_user_id(std::string_view user_id) {
  const std::string_view v = base::trim(user_id);
  if (v.starts_with('{')) {
    error_code ec;
    boost::json::parse_options opt;
    opt.max_depth = 8;
    const boost::json::value jv =
        boost::json::parse(boost::json::string_view(v.data(), v.size()), ec, {}, opt);
    if (ec || !jv.is_object()) {
      return std::nullopt;
    }
    const auto* sid = jv.as_object().if_contains("session_id");
    if (sid == nullptr || !sid->is_string()) {
      return std::nullopt;
    }
    return normalize_key(std::string_view(sid->as_string()));
  }
  constexpr std::string_view marker = "_session_";
  const auto pos = v.rfind(marker);
  if (!v.starts_with("user_") || pos == std::string_view::npos) {
    return std::nullopt;
  }
  return normalize_key(v.substr(pos + marker.size()));
}

Result<RequestInfo> inspect_request(ApiKind api, const HeaderLookup& headers, std::string_view body,
                                    const InspectOptions& options) {
  RequestInfo info;
  info.api = api;

  static constexpr std::pair<std::string_view, SessionSource> header_sources[] = {
      {"x-warden-session", SessionSource::warden_header},
      {"x-claude-code-session-id", SessionSource::claude_code_header},
      {"session-id", SessionSource::codex_header},
      {"session_id", SessionSource::codex_header},
  };
  for (const auto& [name, source] : header_sources) {
    if (const auto v = headers.find(name)) {
      if (auto key = normalize_key(*v)) {
        info.session_key = std::move(*key);
        info.session_source = source;
        break;
      }
    }
  }

  if (const auto v = headers.find("x-warden-replica")) {
    info.pin = parse_pin(v, PinSource::warden_replica);
  } else {
    info.pin = parse_pin(headers.find("x-data-parallel-rank"), PinSource::data_parallel_rank);
  }

  // Only hash the prompt when no header already names the session (a body key may still win later).
  Handler h(info.session_source == SessionSource::none);
  if (const Errc e = JsonScanner(body, options.max_depth, h, info.layout).run(); e != Errc::ok) {
    return e;
  }
  switch (h.model_state_) {
    case Handler::ModelState::absent:
      return Errc::missing_model;
    case Handler::ModelState::not_string:
      return Errc::model_not_string;
    case Handler::ModelState::string:
      if (h.model_.empty()) {
        return Errc::missing_model;
      }
      break;
  }
  info.model = std::move(h.model_);
  info.stream = h.stream_;
  info.include_usage = h.include_usage_;
  info.max_tokens = h.max_tokens_;
  info.prompt_bytes = h.prompt_bytes_;
  info.prompt_tokens_estimate = (h.prompt_bytes_ + 3) / 4;

  if (info.session_source == SessionSource::none && h.prompt_cache_key_) {
    if (auto key = normalize_key(*h.prompt_cache_key_)) {
      info.session_key = std::move(*key);
      info.session_source = SessionSource::prompt_cache_key;
    }
  }
  if (info.session_source == SessionSource::none && h.user_id_) {
    if (auto key = session_from_user_id(*h.user_id_)) {
      info.session_key = std::move(*key);
      info.session_source = SessionSource::metadata_user_id;
    }
  }
  if (info.session_source == SessionSource::none) {
    if (const auto fp = h.fingerprint()) {
      info.session_key = "fp:" + hex16(*fp);
      info.session_source = SessionSource::fingerprint;
    }
  }
  if (!info.session_key.empty()) {
    info.session_hash = XXH3_64bits(info.session_key.data(), info.session_key.size());
  }
  return info;
}

Result<BodyLayout> scan_layout(std::string_view body, const InspectOptions& options) {
  Handler h(false);
  BodyLayout layout;
  if (const Errc e = JsonScanner(body, options.max_depth, h, layout).run(); e != Errc::ok) {
    return e;
  }
  return layout;
}

}  // namespace warden::protocol
