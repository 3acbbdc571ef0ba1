#include "gateway/shared_keys.hpp"

#include <fmt/format.h>

#include <boost/url/parse.hpp>

#include "base/parse.hpp"
#include "base/trim.hpp"

namespace warden::gateway {

namespace {

bool fail(std::string* why, std::string text) {
  if (why) {
    *why = std::move(text);
  }
  return false;
}

// The optional "/DB" path: nothing, "/" or a database number 0..15 (Redis' default count).
bool parse_db(std::string_view path, int& db, std::string* why) {
  if (path.empty() || path == "/") {
    return true;
  }
  const auto n = base::parse_integer<int>(path.substr(1), 0, 15);
  if (!n) {
    return fail(why, fmt::format("database '{}' is not a number from 0 to 15", path.substr(1)));
  }
  db = *n;
  return true;
}

}  // namespace

std::optional<RedisUrl> parse_redis_url(std::string_view text, std::string* why) {
  auto parsed = boost::urls::parse_absolute_uri(base::trim(text));
  if (!parsed) {
    fail(why, "not an absolute URL");
    return std::nullopt;
  }
  const auto& u = *parsed;
  if (u.scheme() != "redis") {
    fail(why, fmt::format("scheme '{}' is not supported (plain redis:// only)", u.scheme()));
    return std::nullopt;
  }
  if (u.host().empty()) {
    fail(why, "no host");
    return std::nullopt;
  }
  if (u.has_query() || u.has_fragment()) {
    fail(why, "a query or fragment is not allowed");
    return std::nullopt;
  }
  RedisUrl out;
  out.host = std::string(u.host_address());
  if (u.host_type() == boost::urls::host_type::ipv6) {
    out.host = std::string(u.encoded_host_address());
    if (out.host.size() > 2 && out.host.front() == '[') {
      out.host = out.host.substr(1, out.host.size() - 2);
    }
  }
  if (u.has_port()) {
    if (u.port_number() == 0) {
      fail(why, "port must be 1..65535");
      return std::nullopt;
    }
    out.port = u.port_number();
  }
  if (!parse_db(u.encoded_path(), out.db, why)) {
    return std::nullopt;
  }
  if (u.has_userinfo()) {
    out.user = std::string(u.user());
    out.password = std::string(u.password());
  }
  out.text = fmt::format("redis://{}:{}/{}", u.encoded_host(), out.port, out.db);
  return out;
}

std::string home_key(std::string_view prefix, std::string_view model, std::uint64_t session_hash) {
  return fmt::format("{}home:{}:{:016x}", prefix, model, session_hash);
}

std::string load_key(std::string_view prefix, std::string_view model) {
  return fmt::format("{}load:{}", prefix, model);
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
