// The names of media and group kinds, the seq part, and session keys. The msgpack payload is in
// kv_events_decode.cpp and kv_events_encode.cpp.

#include "protocol/kv_events.hpp"

#include <xxhash.h>

#include <array>
#include <utility>

namespace warden::protocol::kv {

namespace {

constexpr std::array<std::pair<std::string_view, GroupKind>, 5> kKindNames = {{
    {"full_attention", GroupKind::full_attention},
    {"sliding_window", GroupKind::sliding_window},
    {"mla_attention", GroupKind::mla_attention},
    {"chunked_local_attention", GroupKind::chunked_local},
    {"mamba", GroupKind::mamba},
}};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return -1;
}

}  // namespace

std::string_view medium_name(Medium medium) {
  switch (medium) {
    case Medium::gpu:
      return "GPU";
    case Medium::cpu:
      return "CPU";
    case Medium::storage:
      return "STORAGE";
    case Medium::other:
      break;
  }
  return "OTHER";
}

Medium parse_medium(std::string_view name) {
  if (name == "GPU") {
    return Medium::gpu;
  }
  if (name == "CPU") {
    return Medium::cpu;
  }
  if (name == "STORAGE") {
    return Medium::storage;
  }
  return Medium::other;
}

std::string_view group_kind_name(GroupKind kind) {
  for (const auto& [name, k] : kKindNames) {
    if (k == kind) {
      return name;
    }
  }
  return "other";
}

GroupKind parse_group_kind(std::string_view name) {
  for (const auto& [n, kind] : kKindNames) {
    if (n == name) {
      return kind;
    }
  }
  // Variants of an attention kind that hold a prompt's KV the same way (vLLM's KVCacheSpec subclasses).
  if (name == "sink_full_attention") {
    return GroupKind::full_attention;
  }
  if (name == "sliding_window_mla") {
    return GroupKind::sliding_window;
  }
  return GroupKind::other;
}

bool is_attention(GroupKind kind) {
  return kind != GroupKind::mamba && kind != GroupKind::other;
}

std::string encode_seq(std::int64_t seq) {
  std::string out(8, '\0');
  const auto u = static_cast<std::uint64_t>(seq);
  for (int i = 0; i < 8; ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<char>(u >> (56 - 8 * i));
  }
  return out;
}

std::optional<std::int64_t> decode_seq(std::string_view part) {
  if (part.size() != 8) {
    return std::nullopt;
  }
  std::uint64_t u = 0;
  for (char c : part) {
    u = u << 8 | static_cast<std::uint8_t>(c);
  }
  return static_cast<std::int64_t>(u);
}

std::uint64_t session_key(std::string_view session_id) {
  if (session_id.empty()) {
    return 0;
  }
  if (session_id.size() == 16) {
    std::uint64_t key = 0;
    bool hex = true;
    for (char c : session_id) {
      const int d = hex_digit(c);
      hex = hex && d >= 0;
      key = key << 4 | static_cast<std::uint64_t>(d & 0xf);
    }
    if (hex) {
      return key;
    }
  }
  return XXH3_64bits(session_id.data(), session_id.size());
}

std::string session_id_of(std::uint64_t key) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = kDigits[key & 0xf];
    key >>= 4;
  }
  return out;
}

}  // namespace warden::protocol::kv
