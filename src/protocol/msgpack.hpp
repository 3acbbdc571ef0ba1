#pragma once
// A minimal msgpack reader and writer (https://github.com/msgpack/msgpack/blob/master/spec.md), for vLLM's
// KV cache events: zero-copy reading over a string_view (strings and binaries are views into the input),
// no recursion (skip() counts pending items), every length checked against the bytes left before anything
// is allocated. The writer picks the shortest encoding of each integer, as msgspec does.

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace warden::protocol::msgpack {

/// What a value's first byte says it is.
enum class Kind : std::uint8_t {
  nil,
  boolean,
  uint,
  sint,
  float32,
  float64,
  str,
  bin,
  array,
  map,
  ext,
  invalid
};

/// The kind of the value whose first byte is `b`.
constexpr Kind kind_of(std::uint8_t b) {
  if (b <= 0x7f || (b >= 0xcc && b <= 0xcf)) {
    return Kind::uint;
  }
  if (b >= 0xe0 || (b >= 0xd0 && b <= 0xd3)) {
    return Kind::sint;
  }
  if (b <= 0x8f || b == 0xde || b == 0xdf) {
    return Kind::map;
  }
  if (b <= 0x9f || b == 0xdc || b == 0xdd) {
    return Kind::array;
  }
  if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb)) {
    return Kind::str;
  }
  switch (b) {
    case 0xc0:
      return Kind::nil;
    case 0xc2:
    case 0xc3:
      return Kind::boolean;
    case 0xc4:
    case 0xc5:
    case 0xc6:
      return Kind::bin;
    case 0xca:
      return Kind::float32;
    case 0xcb:
      return Kind::float64;
    case 0xc1:
      return Kind::invalid;
    default:
      return Kind::ext;  // c7-c9, d4-d8
  }
}

/// Reads values from the front of a byte string. A read that fails (wrong kind, too few bytes) returns
/// nullopt or false and leaves the position where the value started, so the caller can name it.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : data_(bytes.data()), size_(bytes.size()) {}

  std::size_t offset() const { return pos_; }
  std::size_t left() const { return size_ - pos_; }
  bool at_end() const { return pos_ == size_; }
  void seek(std::size_t pos) { pos_ = pos; }
  /// The kind of the next value (invalid at the end).
  Kind peek() const { return pos_ < size_ ? kind_of(byte(pos_)) : Kind::invalid; }

  /// A nil, consumed; false (nothing consumed) for anything else.
  bool nil() {
    if (pos_ < size_ && byte(pos_) == 0xc0) {
      ++pos_;
      return true;
    }
    return false;
  }

  /// An unsigned integer (a non-negative signed one too).
  std::optional<std::uint64_t> uint() {
    const std::size_t start = pos_;
    const auto v = integer();
    if (!v || (v->negative && v->bits >> 63 != 0)) {
      pos_ = start;
      return std::nullopt;
    }
    return v->bits;
  }

  /// A signed integer; an unsigned one above INT64_MAX fails.
  std::optional<std::int64_t> sint() {
    const std::size_t start = pos_;
    const auto v = integer();
    if (!v || (!v->negative && v->bits >> 63 != 0)) {
      pos_ = start;
      return std::nullopt;
    }
    return static_cast<std::int64_t>(v->bits);
  }

  /// Any integer as its 64 bits (two's complement for a negative one).
  std::optional<std::uint64_t> bits64() {
    const auto v = integer();
    if (!v) {
      return std::nullopt;
    }
    return v->bits;
  }

  /// A float32 or float64, or an integer as a double.
  std::optional<double> number() {
    if (pos_ >= size_) {
      return std::nullopt;
    }
    const std::uint8_t b = byte(pos_);
    if (b == 0xcb && left() >= 9) {
      const std::uint64_t u = be(pos_ + 1, 8);
      pos_ += 9;
      double d;
      std::memcpy(&d, &u, 8);
      return d;
    }
    if (b == 0xca && left() >= 5) {
      const auto u = static_cast<std::uint32_t>(be(pos_ + 1, 4));
      pos_ += 5;
      float f;
      std::memcpy(&f, &u, 4);
      return static_cast<double>(f);
    }
    const std::size_t start = pos_;
    if (const auto v = integer()) {
      return v->negative ? static_cast<double>(static_cast<std::int64_t>(v->bits))
                         : static_cast<double>(v->bits);
    }
    pos_ = start;
    return std::nullopt;
  }

  /// A str, as a view into the input.
  std::optional<std::string_view> str() { return blob(Kind::str); }
  /// A bin, as a view into the input.
  std::optional<std::string_view> bin() { return blob(Kind::bin); }

  /// An array header: the number of items that follow. Fails when the items could not fit in the bytes
  /// left (each takes at least one), so a caller may reserve that many.
  std::optional<std::uint32_t> array() { return container(Kind::array, 1); }
  /// A map header: the number of key/value pairs that follow (checked as array()).
  std::optional<std::uint32_t> map() { return container(Kind::map, 2); }

  /// Skips one whole value (nested ones included) without recursion; false when truncated or invalid.
  bool skip() {
    const std::size_t start = pos_;
    std::uint64_t pending = 1;
    while (pending > 0) {
      --pending;
      if (!skip_head(pending)) {
        pos_ = start;
        return false;
      }
    }
    return true;
  }

 private:
  struct Int {
    std::uint64_t bits;
    bool negative;
  };

  std::uint8_t byte(std::size_t at) const { return static_cast<std::uint8_t>(data_[at]); }

  std::uint64_t be(std::size_t at, std::size_t n) const {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      v = v << 8 | byte(at + i);
    }
    return v;
  }

  std::optional<Int> integer() {
    if (pos_ >= size_) {
      return std::nullopt;
    }
    const std::uint8_t b = byte(pos_);
    if (b <= 0x7f) {
      ++pos_;
      return Int{b, false};
    }
    if (b >= 0xe0) {
      ++pos_;
      return Int{static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int8_t>(b))), true};
    }
    if (b < 0xcc || b > 0xd3) {
      return std::nullopt;
    }
    const std::size_t n = std::size_t{1} << (b & 0x3);
    if (left() < 1 + n) {
      return std::nullopt;
    }
    std::uint64_t v = be(pos_ + 1, n);
    pos_ += 1 + n;
    if (b <= 0xcf) {
      return Int{v, false};
    }
    const unsigned shift = static_cast<unsigned>(64 - 8 * n);  // sign-extend an n-byte value
    v = static_cast<std::uint64_t>(static_cast<std::int64_t>(v << shift) >> shift);
    return Int{v, static_cast<std::int64_t>(v) < 0};
  }

  // The length of a str/bin/array/map whose header starts at pos_, and the header's size; nullopt when the
  // byte is not of that kind or the header is cut.
  std::optional<std::pair<std::uint64_t, std::size_t>> length(Kind want) const {
    if (pos_ >= size_) {
      return std::nullopt;
    }
    const std::uint8_t b = byte(pos_);
    if (kind_of(b) != want) {
      return std::nullopt;
    }
    if (want == Kind::str && b <= 0xbf) {
      return std::pair<std::uint64_t, std::size_t>{b & 0x1f, 1};
    }
    if ((want == Kind::array || want == Kind::map) && b <= 0x9f) {
      return std::pair<std::uint64_t, std::size_t>{b & 0x0f, 1};
    }
    // str8/bin8: 1 byte of length, then 2 and 4; array16/map16: 2, then 4.
    std::size_t n;
    if (want == Kind::str || want == Kind::bin) {
      n = std::size_t{1} << (want == Kind::str ? b - 0xd9 : b - 0xc4);
    } else {
      n = (b == 0xdc || b == 0xde) ? 2 : 4;
    }
    if (left() < 1 + n) {
      return std::nullopt;
    }
    return std::pair<std::uint64_t, std::size_t>{be(pos_ + 1, n), 1 + n};
  }

  std::optional<std::string_view> blob(Kind want) {
    const auto len = length(want);
    if (!len || len->first > left() - len->second) {
      return std::nullopt;
    }
    const std::string_view out(data_ + pos_ + len->second, static_cast<std::size_t>(len->first));
    pos_ += len->second + out.size();
    return out;
  }

  std::optional<std::uint32_t> container(Kind want, std::uint64_t per_item) {
    const auto len = length(want);
    if (!len || len->first * per_item > left() - len->second) {
      return std::nullopt;
    }
    pos_ += len->second;
    return static_cast<std::uint32_t>(len->first);
  }

  // Consumes the head of one value (a container's items become pending) or the whole of a scalar.
  bool skip_head(std::uint64_t& pending) {
    if (pos_ >= size_) {
      return false;
    }
    const std::uint8_t b = byte(pos_);
    switch (kind_of(b)) {
      case Kind::nil:
      case Kind::boolean:
        ++pos_;
        return true;
      case Kind::uint:
      case Kind::sint:
        return integer().has_value();
      case Kind::float32:
      case Kind::float64:
        return number().has_value();
      case Kind::str:
        return str().has_value();
      case Kind::bin:
        return bin().has_value();
      case Kind::array:
      case Kind::map: {
        const bool is_map = kind_of(b) == Kind::map;
        const auto n = is_map ? map() : array();
        if (n) {
          pending += is_map ? 2 * std::uint64_t{*n} : *n;
        }
        return n.has_value();
      }
      case Kind::ext:
        return skip_ext(b);
      case Kind::invalid:
        return false;
    }
    return false;
  }

  bool skip_ext(std::uint8_t b) {
    std::uint64_t len;
    std::size_t head;
    if (b >= 0xd4 && b <= 0xd8) {
      len = std::uint64_t{1} << (b - 0xd4);
      head = 2;  // type byte
    } else {
      const std::size_t n = std::size_t{1} << (b - 0xc7);
      if (left() < 2 + n) {
        return false;
      }
      len = be(pos_ + 1, n);
      head = 2 + n;
    }
    if (left() < head || len > left() - head) {
      return false;
    }
    pos_ += head + static_cast<std::size_t>(len);
    return true;
  }

  const char* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

/// Appends msgpack values to a string, each in its shortest form (as msgspec writes them).
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void nil() { out_.push_back(static_cast<char>(0xc0)); }

  void uint(std::uint64_t v) {
    if (v <= 0x7f) {
      out_.push_back(static_cast<char>(v));
    } else if (v <= 0xff) {
      head(0xcc, v, 1);
    } else if (v <= 0xffff) {
      head(0xcd, v, 2);
    } else if (v <= 0xffffffffu) {
      head(0xce, v, 4);
    } else {
      head(0xcf, v, 8);
    }
  }

  void sint(std::int64_t v) {
    if (v >= 0) {
      uint(static_cast<std::uint64_t>(v));
    } else if (v >= -32) {
      out_.push_back(static_cast<char>(static_cast<std::int8_t>(v)));
    } else if (v >= INT8_MIN) {
      head(0xd0, static_cast<std::uint64_t>(v), 1);
    } else if (v >= INT16_MIN) {
      head(0xd1, static_cast<std::uint64_t>(v), 2);
    } else if (v >= INT32_MIN) {
      head(0xd2, static_cast<std::uint64_t>(v), 4);
    } else {
      head(0xd3, static_cast<std::uint64_t>(v), 8);
    }
  }

  void float64(double d) {
    std::uint64_t u;
    std::memcpy(&u, &d, 8);
    head(0xcb, u, 8);
  }

  void str(std::string_view s) {
    const std::size_t n = s.size();
    if (n < 32) {
      out_.push_back(static_cast<char>(0xa0 | n));
    } else if (n <= 0xff) {
      head(0xd9, n, 1);
    } else if (n <= 0xffff) {
      head(0xda, n, 2);
    } else {
      head(0xdb, n, 4);
    }
    out_.append(s);
  }

  void array(std::size_t n) { container(0x90, 0xdc, n); }
  void map(std::size_t n) { container(0x80, 0xde, n); }

 private:
  // A type byte and the low `n` bytes of `v`, big-endian.
  void head(std::uint8_t type, std::uint64_t v, std::size_t n) {
    out_.push_back(static_cast<char>(type));
    for (std::size_t i = n; i-- > 0;) {
      out_.push_back(static_cast<char>(v >> (8 * i)));
    }
  }

  void container(std::uint8_t fix, std::uint8_t type16, std::size_t n) {
    if (n < 16) {
      out_.push_back(static_cast<char>(fix | n));
    } else if (n <= 0xffff) {
      head(type16, n, 2);
    } else {
      head(type16 + 1, n, 4);
    }
  }

  std::string& out_;
};

}  // namespace warden::protocol::msgpack
