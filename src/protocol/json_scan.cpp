#include "protocol/json_scan.hpp"

namespace warden::protocol {

namespace {

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

}  // namespace

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
        std::uint32_t cp = static_cast<std::uint32_t>(detail::hex4(raw.data() + i));
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= raw.size()) {
          const auto lo = static_cast<std::uint32_t>(detail::hex4(raw.data() + i + 2));
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

}  // namespace warden::protocol
