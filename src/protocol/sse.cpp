#include "protocol/sse.hpp"

#include <cstring>

namespace warden::protocol {

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

// First CR or LF: two memchr passes (LF over everything, CR only before that LF) beat find_first_of,
// which tests every byte against both characters one at a time.
std::size_t find_line_end(std::string_view s) noexcept {
  const void* lf = std::memchr(s.data(), '\n', s.size());
  const std::size_t limit =
      lf == nullptr ? s.size() : static_cast<std::size_t>(static_cast<const char*>(lf) - s.data());
  const void* cr = std::memchr(s.data(), '\r', limit);
  if (cr != nullptr) {
    return static_cast<std::size_t>(static_cast<const char*>(cr) - s.data());
  }
  return lf == nullptr ? std::string_view::npos : limit;
}

}  // namespace

Result<void> SseParser::feed_impl(std::string_view bytes, Thunk thunk, void* ctx) {
  if (failed_) {
    return Errc::sse_event_too_large;
  }
  if (last_cr_ && !bytes.empty()) {
    last_cr_ = false;
    if (bytes.front() == '\n') {  // the LF of a CRLF split across fragments
      if (limits_.capture_raw) {
        ev_.raw += '\n';
      }
      bytes.remove_prefix(1);
    }
  }
  while (!bytes.empty()) {
    const std::size_t pos = find_line_end(bytes);
    if (pos == std::string_view::npos) {
      if (event_bytes_ + line_.size() + bytes.size() > limits_.max_event_bytes) {
        failed_ = true;
        return Errc::sse_event_too_large;
      }
      line_.append(bytes);
      return {};
    }
    std::size_t end = pos + 1;  // bytes consumed incl. the line end
    if (bytes[pos] == '\r') {
      if (end < bytes.size()) {
        if (bytes[end] == '\n') {
          ++end;
        }
      } else {
        last_cr_ = true;  // an LF may follow in the next fragment
      }
    }
    // A line end counts as one byte whatever its spelling, so a CRLF split between fragments (whose LF
    // is consumed with the next one) counts the same as a whole one.
    const std::size_t line_bytes = line_.size() + pos + 1;
    if (event_bytes_ + line_bytes > limits_.max_event_bytes) {
      failed_ = true;
      return Errc::sse_event_too_large;
    }
    event_bytes_ += line_bytes;
    if (limits_.capture_raw) {
      ev_.raw += line_;
      ev_.raw.append(bytes.substr(0, end));
    }
    if (line_.empty()) {
      process_line(bytes.substr(0, pos), thunk, ctx);
    } else {
      line_.append(bytes.substr(0, pos));
      process_line(line_, thunk, ctx);
      line_.clear();
    }
    bytes.remove_prefix(end);
  }
  return {};
}

void SseParser::process_line(std::string_view line, Thunk thunk, void* ctx) {
  if (!bom_checked_) {
    bom_checked_ = true;
    if (line.starts_with(kBom)) {
      line.remove_prefix(kBom.size());
    }
  }
  if (line.empty()) {
    if (has_data_) {
      ++events_;
      thunk(ctx, ev_);
    }
    ev_.event.clear();
    ev_.data.clear();
    ev_.raw.clear();
    has_data_ = false;
    event_bytes_ = 0;
    return;
  }
  if (line.front() == ':') {
    ++comments_;
    return;
  }
  std::string_view field = line;
  std::string_view value;
  if (const auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') {
      value.remove_prefix(1);
    }
  }
  if (field == "data") {
    if (has_data_) {
      ev_.data += '\n';
    }
    ev_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    ev_.event.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) {
      ev_.id.assign(value);
    }
  }
  // "retry" and unknown fields are ignored, as the standard says.
}

bool SseParser::finish() noexcept {
  const bool discarded = has_data_ || !line_.empty();
  line_.clear();
  ev_.event.clear();
  ev_.data.clear();
  ev_.raw.clear();
  has_data_ = false;
  event_bytes_ = 0;
  last_cr_ = false;
  return discarded;
}

void append_sse(std::string& out, std::string_view event, std::string_view data) {
  if (!event.empty()) {
    out += "event: ";
    for (char c : event) {
      if (c != '\r' && c != '\n') {
        out += c;
      }
    }
    out += '\n';
  }
  while (true) {
    const std::size_t pos = data.find_first_of("\r\n");
    out += "data: ";
    out.append(data.substr(0, pos));
    out += '\n';
    if (pos == std::string_view::npos) {
      break;
    }
    std::size_t next = pos + 1;
    if (data[pos] == '\r' && next < data.size() && data[next] == '\n') {
      ++next;
    }
    data.remove_prefix(next);
  }
  out += '\n';
}

std::string format_sse(std::string_view event, std::string_view data) {
  std::string out;
  out.reserve(event.size() + data.size() + 24);
  append_sse(out, event, data);
  return out;
}

}  // namespace warden::protocol
