#include "bench/placement_fields.hpp"

#include <charconv>

#include "base/parse.hpp"

namespace warden::bench {

namespace {

constexpr std::string_view kFieldPrefix = ": x-warden-";

}  // namespace

void PlacementFields::take(std::string_view name, std::string_view value) {
  if (name == "x-warden-route") {
    route = std::string(value);
  } else if (name == "x-warden-replica") {
    int v = 0;
    if (auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        ec == std::errc{} && p == value.data() + value.size()) {
      replica = v;
    }
  } else if (name == "x-warden-queued") {
    if (const auto seconds = base::parse_seconds(value)) {
      queued = *seconds;
    }
  } else if (name == "x-warden-expected-cached") {
    std::uint64_t tokens = 0;
    std::uint64_t block = 0;
    const char* end = value.data() + value.size();
    auto [p, ec] = std::from_chars(value.data(), end, tokens);
    constexpr std::string_view block_key = "; block=";
    if (ec != std::errc{} ||
        std::string_view(p, static_cast<std::size_t>(end - p)).substr(0, block_key.size()) != block_key ||
        std::from_chars(p + block_key.size(), end, block).ec != std::errc{}) {
      return;
    }
    expected_cached = tokens;
    expected_block = block;
  }
}

bool PlacementComment::feed(std::string_view bytes) {
  if (done_) {
    return true;
  }
  buffer_.append(bytes);
  for (std::size_t end = buffer_.find("\n\n"); end != std::string::npos; end = buffer_.find("\n\n")) {
    const std::string_view event(buffer_.data(), end + 1);
    if (!event.starts_with(kFieldPrefix)) {
      if (event.starts_with(":") || event.starts_with("event: ping\n") ||
          event.starts_with("event: keepalive\n")) {
        buffer_.erase(0, end + 2);  // a keep-alive: the comment is still to come
        continue;
      }
      done_ = true;  // the engine's first event: no placement comment came
      return true;
    }
    for (std::size_t at = 0; at < event.size();) {
      const std::size_t eol = event.find('\n', at);
      const std::string_view line = event.substr(at + 2, eol - at - 2);  // without ": "
      if (const std::size_t colon = line.find(": "); colon != std::string_view::npos) {
        fields_.take(line.substr(0, colon), line.substr(colon + 2));
      }
      at = eol + 1;
    }
    found_ = true;
    done_ = true;
    buffer_.clear();
    return true;
  }
  return false;
}

}  // namespace warden::bench
