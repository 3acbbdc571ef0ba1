// What several wardens share through Redis, as text: the key names and the load a warden publishes for
// the others. Pure functions (no sockets), unit-tested directly; the client that
// sends them is shared_state.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warden::gateway {

// A conversation's home: `{prefix}home:{model}:{16 hex digits of the session hash}`.
std::string home_key(std::string_view prefix, std::string_view model, std::uint64_t session_hash);
// The hash of every warden's load for one model (one field per warden): `{prefix}load:{model}`.
std::string load_key(std::string_view prefix, std::string_view model);

// A home's value is the replica index in decimal; nullopt for anything else.
std::optional<std::uint32_t> parse_home(std::string_view value);

// One replica's load as one warden sees it.
struct ReplicaLoad {
  std::uint32_t in_flight = 0;
  std::uint32_t active_conversations = 0;
  std::uint64_t held_tokens = 0;

  friend bool operator==(const ReplicaLoad&, const ReplicaLoad&) = default;
};

// A warden's load field: "UNIX_MS IF,AC,HT IF,AC,HT ..." (one triple per replica, in replica order).
std::string format_load(std::int64_t unix_ms, const std::vector<ReplicaLoad>& replicas);
struct PublishedLoad {
  std::int64_t unix_ms = 0;
  std::vector<ReplicaLoad> replicas;
};
std::optional<PublishedLoad> parse_load(std::string_view value);

// Adds `load` replica by replica into `sum` (sized to `replica_count`; replicas beyond it are ignored).
void add_load(std::vector<ReplicaLoad>& sum, const std::vector<ReplicaLoad>& load, std::size_t replica_count);

}  // namespace warden::gateway
