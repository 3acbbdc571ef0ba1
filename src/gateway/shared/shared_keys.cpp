#include "gateway/shared/shared_keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "base/parse.hpp"

namespace warden::gateway {

std::string home_key(std::string_view prefix, std::string_view model, std::uint64_t session_hash) {
  return fmt::format("{}home:{}:{:016x}", prefix, model, session_hash);
}

std::string load_key(std::string_view prefix, std::string_view model) {
  return fmt::format("{}load:{}", prefix, model);
}

std::string turn_key(std::string_view prefix, std::string_view model, std::uint64_t session_hash) {
  return fmt::format("{}turn:{}:{:016x}", prefix, model, session_hash);
}

std::string elsewhere_key(std::string_view prefix, std::string_view model, std::string_view warden_id) {
  return fmt::format("{}elsewhere:{}:{}", prefix, model, warden_id);
}

std::string format_elsewhere(const ElsewhereEntry& entry) {
  if (entry.computed_at == core::SessionEntry::unknown) {
    return fmt::format("{:016x} {} -", entry.session_hash, entry.home);
  }
  return fmt::format("{:016x} {} {}", entry.session_hash, entry.home, entry.computed_at);
}

std::optional<ElsewhereEntry> parse_elsewhere(std::string_view text) {
  const std::size_t a = text.find(' ');
  const std::size_t b = a == std::string_view::npos ? a : text.find(' ', a + 1);
  if (a != 16 || b == std::string_view::npos) {
    return std::nullopt;
  }
  ElsewhereEntry out;
  const auto* end = text.data() + a;
  if (std::from_chars(text.data(), end, out.session_hash, 16).ptr != end) {
    return std::nullopt;
  }
  const auto home = parse_home(text.substr(a + 1, b - a - 1));
  const std::string_view mark = text.substr(b + 1);
  const auto computed = mark == "-" ? std::optional<std::uint64_t>(core::SessionEntry::unknown)
                                    : base::parse_integer<std::uint64_t>(mark);
  if (!home || !computed) {
    return std::nullopt;
  }
  out.home = *home;
  out.computed_at = *computed;
  return out;
}

const std::string_view keep_alive_script = R"lua(
local home = redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX', 'GET')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local owner = redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2], 'GET')
if owner and owner ~= ARGV[3] and (not home or home == ARGV[1]) then
  local list = ARGV[5] .. owner
  redis.call('RPUSH', list, ARGV[4])
  redis.call('PEXPIRE', list, ARGV[6])
end
return home
)lua";

RedisCommand keep_alive_command(std::string_view prefix, std::string_view model, const ElsewhereEntry& entry,
                                std::int64_t px_ms, std::string_view warden_id, std::int64_t list_px_ms) {
  return {"EVAL",
          std::string(keep_alive_script),
          "2",
          home_key(prefix, model, entry.session_hash),
          turn_key(prefix, model, entry.session_hash),
          std::to_string(entry.home),
          std::to_string(std::max<std::int64_t>(1, px_ms)),
          std::string(warden_id),
          format_elsewhere(entry),
          elsewhere_key(prefix, model, ""),
          std::to_string(std::max<std::int64_t>(1, list_px_ms))};
}

std::string placement_lock_key(std::string_view prefix, std::string_view model) {
  return fmt::format("{}place:{}", prefix, model);
}

std::string placement_next_key(std::string_view prefix, std::string_view model) {
  return fmt::format("{}place-next:{}", prefix, model);
}

std::string placement_token(std::string_view warden_id, std::uint64_t seq) {
  return fmt::format("{}#{}", warden_id, seq);
}

// Lua's GET of a missing key is false; a token's warden is what comes before its last '#'.
const std::string_view placement_lock_script = R"lua(
local load = redis.call('HGETALL', KEYS[4])
local home = redis.call('GET', KEYS[1])
if home then return {home, 0, load} end
local holder = redis.call('GET', KEYS[2])
local waiting = redis.call('GET', KEYS[3])
local own = holder and string.match(holder, '^(.*)#[^#]*$') == ARGV[3]
if (not holder or own) and (not waiting or waiting == ARGV[3]) then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
  if waiting then redis.call('DEL', KEYS[3]) end
  return {false, 1, load}
end
if not waiting then redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[2]) end
return {false, 0, load}
)lua";

const std::string_view placement_release_script = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if redis.call('GET', KEYS[2]) == ARGV[2] then redis.call('DEL', KEYS[2]) end
return 0
)lua";

RedisCommand placement_lock_command(std::string_view prefix, std::string_view model,
                                    std::uint64_t session_hash, std::string_view token, std::int64_t px_ms,
                                    std::string_view warden_id) {
  return {"EVAL",
          std::string(placement_lock_script),
          "4",
          home_key(prefix, model, session_hash),
          placement_lock_key(prefix, model),
          placement_next_key(prefix, model),
          load_key(prefix, model),
          std::string(token),
          std::to_string(std::max<std::int64_t>(1, px_ms)),
          std::string(warden_id)};
}

RedisCommand placement_release_command(std::string_view prefix, std::string_view model,
                                       std::string_view token, std::string_view warden_id) {
  return {"EVAL",
          std::string(placement_release_script),
          "2",
          placement_lock_key(prefix, model),
          placement_next_key(prefix, model),
          std::string(token),
          std::string(warden_id)};
}

std::optional<std::uint32_t> parse_home(std::string_view value) {
  return base::parse_integer<std::uint32_t>(value, 0, 65535);
}

std::string format_load(std::int64_t unix_ms, const std::vector<ReplicaLoad>& replicas) {
  std::string out = std::to_string(unix_ms);
  for (const ReplicaLoad& r : replicas) {
    fmt::format_to(std::back_inserter(out), " {},{},{}", r.in_flight, r.active_conversations, r.held_tokens);
  }
  return out;
}

std::optional<PublishedLoad> parse_load(std::string_view value) {
  PublishedLoad out;
  std::size_t at = value.find(' ');
  const auto stamp = base::parse_integer<std::int64_t>(value.substr(0, at));
  if (!stamp) {
    return std::nullopt;
  }
  out.unix_ms = *stamp;
  while (at != std::string_view::npos) {
    const std::size_t next = value.find(' ', at + 1);
    const std::string_view triple =
        value.substr(at + 1, next == std::string_view::npos ? std::string_view::npos : next - at - 1);
    const auto c1 = triple.find(',');
    const auto c2 = c1 == std::string_view::npos ? c1 : triple.find(',', c1 + 1);
    if (c2 == std::string_view::npos) {
      return std::nullopt;
    }
    const auto in_flight = base::parse_integer<std::uint32_t>(triple.substr(0, c1));
    const auto active = base::parse_integer<std::uint32_t>(triple.substr(c1 + 1, c2 - c1 - 1));
    const auto held = base::parse_integer<std::uint64_t>(triple.substr(c2 + 1));
    if (!in_flight || !active || !held) {
      return std::nullopt;
    }
    out.replicas.push_back({*in_flight, *active, *held});
    at = next;
  }
  return out;
}

void add_load(std::vector<ReplicaLoad>& sum, const std::vector<ReplicaLoad>& load,
              std::size_t replica_count) {
  sum.resize(replica_count);
  for (std::size_t i = 0; i < load.size() && i < replica_count; ++i) {
    sum[i].in_flight += load[i].in_flight;
    sum[i].active_conversations += load[i].active_conversations;
    sum[i].held_tokens += load[i].held_tokens;
  }
}

}  // namespace warden::gateway
