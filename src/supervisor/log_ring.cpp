#include "supervisor/log_ring.hpp"

#include <algorithm>

namespace warden::supervisor {

std::string_view to_string(LogStream s) {
  switch (s) {
    case LogStream::out:
      return "stdout";
    case LogStream::err:
      return "stderr";
    case LogStream::warden:
      return "warden";
  }
  return "stdout";
}

std::string sanitize_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += (c < 0x20 && c != '\t') || c == 0x7f ? '?' : static_cast<char>(c);
      ++i;
      continue;
    }
    // Length and lowest value of a well-formed sequence starting with c (no overlongs, no surrogates).
    std::size_t len = 0;
    std::uint32_t cp = 0;
    std::uint32_t min = 0;
    if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    }
    bool ok = len > 0 && i + len <= text.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      ok = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    ok = ok && cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    if (!ok) {
      out += '?';
      ++i;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

LogRing::LogRing(std::size_t capacity, std::size_t max_line_bytes)
    : capacity_(std::max<std::size_t>(1, capacity)),
      max_line_bytes_(std::max<std::size_t>(16, max_line_bytes)) {}

void LogRing::push(LogStream s, std::string text, std::int64_t unix_ms) {
  if (!text.empty() && text.back() == '\r') {
    text.pop_back();
  }
  for (const std::string& secret : secrets_) {
    for (std::size_t at = text.find(secret); at != std::string::npos;
         at = text.find(secret, at + kRedacted.size())) {
      text.replace(at, secret.size(), kRedacted);
    }
  }
  lines_.push_back(LogLine{unix_ms, s, sanitize_line(text)});
  ++total_;
  while (lines_.size() > capacity_) {
    lines_.pop_front();
  }
}

void LogRing::redact(std::vector<std::string> secrets) {
  std::erase_if(secrets, [](const std::string& v) { return v.empty(); });
  // Longest first: a secret containing another one is hidden whole.
  std::sort(secrets.begin(), secrets.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  secrets_ = std::move(secrets);
}

void LogRing::feed(LogStream s, std::string_view bytes, std::int64_t unix_ms) {
  std::string& part = partial(s);
  while (!bytes.empty()) {
    auto nl = bytes.find('\n');
    const auto piece = bytes.substr(0, nl);
    // An endless line (no newline) is cut into pieces rather than growing without bound.
    const std::size_t room = max_line_bytes_ - std::min(max_line_bytes_, part.size());
    if (piece.size() >= room && (nl == std::string_view::npos || piece.size() > room)) {
      part.append(piece.substr(0, room));
      push(s, std::move(part), unix_ms);
      part.clear();
      bytes.remove_prefix(room);
      continue;
    }
    part.append(piece);
    if (nl == std::string_view::npos) {
      return;
    }
    push(s, std::move(part), unix_ms);
    part.clear();
    bytes.remove_prefix(nl + 1);
  }
}

void LogRing::flush(LogStream s, std::int64_t unix_ms) {
  std::string& part = partial(s);
  if (!part.empty()) {
    push(s, std::move(part), unix_ms);
    part.clear();
  }
}

void LogRing::note(std::string text, std::int64_t unix_ms) {
  push(LogStream::warden, std::move(text), unix_ms);
}

std::vector<LogLine> LogRing::tail(std::size_t n) const {
  n = std::min(n, lines_.size());
  return {lines_.end() - static_cast<std::ptrdiff_t>(n), lines_.end()};
}

}  // namespace warden::supervisor
