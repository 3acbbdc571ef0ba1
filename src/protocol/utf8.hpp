#pragma once
// UTF-8 validation shared by the JSON scanner and the JSON string writer (internal to the layer).

#include <cstddef>

namespace warden::protocol::detail {

/// Length of the valid UTF-8 sequence at p (p < end, *p >= 0x80), or 0 if it is not one: the same rules
/// as Boost.JSON's validation (no overlong forms, no UTF-16 surrogates, nothing above U+10FFFF).
inline std::size_t utf8_sequence(const unsigned char* p, const unsigned char* end) noexcept {
  const unsigned c = p[0];
  const auto avail = static_cast<std::size_t>(end - p);
  auto cont = [&](std::size_t i) { return i < avail && (p[i] & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) {
    return cont(1) ? 2 : 0;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2) || (c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F)) {
      return 0;
    }
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3) || (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)) {
      return 0;
    }
    return 4;
  }
  return 0;
}

}  // namespace warden::protocol::detail
