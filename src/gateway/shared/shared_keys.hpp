// What several wardens share through Redis, as text: the key names and the load a warden publishes for
// the others. Pure functions (no sockets), unit-tested directly; the client that
// sends them is shared_state.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/session_table.hpp"

namespace warden::gateway {

// One Redis command, its arguments as text (sent by shared_state.hpp).
using RedisCommand = std::vector<std::string>;

// A conversation's home: `{prefix}home:{model}:{16 hex digits of the session hash}`.
std::string home_key(std::string_view prefix, std::string_view model, std::uint64_t session_hash);
// The hash of every warden's load for one model (one field per warden): `{prefix}load:{model}`.
std::string load_key(std::string_view prefix, std::string_view model);

// The placement lock of one model and the warden waiting next for it (placement_lock_script):
// `{prefix}place:{model}` and `{prefix}place-next:{model}`.
std::string placement_lock_key(std::string_view prefix, std::string_view model);
std::string placement_next_key(std::string_view prefix, std::string_view model);
// A lock holder's token: `{warden_id}#{seq}`, unique per placement; the warden is what comes before '#'.
std::string placement_token(std::string_view warden_id, std::uint64_t seq);

// New conversations are placed one at a time across the wardens of a model. EVAL with KEYS home, lock,
// next, load and ARGV token, PX (ms), warden id; replies {home or nil, 1 if the lock was taken else 0, the
// load hash}. A home already there is returned without the lock. The lock is taken when it is free or
// this warden's own (an earlier placement whose release is on its way) and no other warden waits next;
// otherwise this warden registers as next (if nobody is), so two busy wardens take turns.
extern const std::string_view placement_lock_script;
// EVAL with KEYS lock, next and ARGV token, warden id: deletes the lock if it still holds the token, and
// this warden's registration as next.
extern const std::string_view placement_release_script;
RedisCommand placement_lock_command(std::string_view prefix, std::string_view model,
                                    std::uint64_t session_hash, std::string_view token, std::int64_t px_ms,
                                    std::string_view warden_id);
RedisCommand placement_release_command(std::string_view prefix, std::string_view model,
                                       std::string_view token, std::string_view warden_id);

// Which warden had a conversation's latest turn, so that each conversation counts in one warden's load
// only: `{prefix}turn:{model}:{16 hex digits}` holds that warden's id, and `{prefix}elsewhere:{model}:{id}`
// is the list of conversations whose latest turn another warden has had since (one
// format_elsewhere entry each), which warden `id` pops every second.
std::string turn_key(std::string_view prefix, std::string_view model, std::uint64_t session_hash);
std::string elsewhere_key(std::string_view prefix, std::string_view model, std::string_view warden_id);

// A conversation whose latest turn was at another warden: its key, its home and that home's computed-token
// mark after the turn (core::SessionEntry::home_computed_at; `unknown` as "-"). "HASH16 HOME MARK".
struct ElsewhereEntry {
  std::uint64_t session_hash = 0;
  std::uint32_t home = 0;
  std::uint64_t computed_at = 0;

  friend bool operator==(const ElsewhereEntry&, const ElsewhereEntry&) = default;
};
std::string format_elsewhere(const ElsewhereEntry& entry);
std::optional<ElsewhereEntry> parse_elsewhere(std::string_view text);

// The keep-alive of one conversation this warden routed since its last flush. EVAL with KEYS home, turn
// and ARGV home, PX (ms), warden id, this entry (format_elsewhere), the elsewhere list's key without the
// warden id, that list's PX: writes the home if absent (pushing its expiry back either way), makes this
// warden the turn's owner, and if another warden owned it and agrees on the home, pushes the entry onto
// that warden's elsewhere list. Replies with the home Redis held before (nil if none). The list's key is
// built in the script (the previous owner is known only there): one Redis server, not a Cluster.
extern const std::string_view keep_alive_script;
RedisCommand keep_alive_command(std::string_view prefix, std::string_view model, const ElsewhereEntry& entry,
                                std::int64_t px_ms, std::string_view warden_id, std::int64_t list_px_ms);

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
