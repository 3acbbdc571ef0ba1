#pragma once
// vLLM's KV cache events on the wire (vllm/distributed/kv_events.py), sans-I/O: the payload of one ZMQ
// message part, encoded and decoded, and the 8-byte sequence number part. The transport (ZMQ PUB/SUB,
// the replay DEALER) lives in the I/O layers; this file only turns bytes into values and back.
//
// A publisher sends multipart [topic, seq, payload]: seq an 8-byte big-endian signed counter from 0 (back
// to 0 when the engine restarts; -1 ends a replay), payload msgpack of EventBatch. vLLM encoded batches and
// events as arrays (`[ts, [events], rank]`, each event `[type, field, ...]` in declaration order) and, since
// 2026, as maps with "type" first (the tagged-map encoding). decode() reads both; encode() writes either.
//
// Decoding never trusts its input: a malformed, truncated or oversized payload is an error with a reason
// (the caller counts and drops it), unknown fields and unknown event types are skipped, unknown group kinds
// and media are kept as `other`. token_ids are counted, not kept: the warden needs no tokens.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.hpp"

namespace warden::protocol::kv {

/// Where a block lives: vLLM's `medium` ("GPU", "CPU", "STORAGE"; absent on older engines = GPU).
enum class Medium : std::uint8_t { gpu, cpu, storage, other };

/// The emitting KV cache group's kind (`kv_cache_spec_kind`; absent on older engines = full_attention).
/// Attention kinds hold a prompt's KV and are the prefix cache; `mamba` blocks are saved linear-attention
/// states of hybrid models.
enum class GroupKind : std::uint8_t {
  full_attention,
  sliding_window,
  mla_attention,
  chunked_local,
  mamba,
  other
};

[[nodiscard]] std::string_view medium_name(Medium medium);
[[nodiscard]] Medium parse_medium(std::string_view name);
[[nodiscard]] std::string_view group_kind_name(GroupKind kind);
[[nodiscard]] GroupKind parse_group_kind(std::string_view name);
/// Attention kinds (full, sliding window, MLA, chunked local): their blocks are prefix cache.
[[nodiscard]] bool is_attention(GroupKind kind);

struct BlockStored {
  /// u64 each (a hash sent as bytes is read as its low 64 bits: the last 8 bytes, big-endian).
  std::vector<std::uint64_t> block_hashes;
  /// The block before the first one; empty for a chain that starts at the root.
  std::optional<std::uint64_t> parent_block_hash;
  /// Encoding only: the tokens of all blocks of the event. Decoding leaves it empty and sets token_count.
  std::vector<std::uint32_t> token_ids;
  std::uint32_t token_count = 0;
  std::uint32_t block_size = 0;
  std::optional<std::int64_t> lora_id;
  Medium medium = Medium::gpu;
  std::optional<std::string> lora_name;
  std::optional<std::uint32_t> group_idx;
  GroupKind kind = GroupKind::full_attention;
  std::optional<std::uint32_t> sliding_window;
  /// The session_id of the request whose prefill stored the blocks (GPU stores since 2026-08); empty: none.
  std::string session_id;

  friend bool operator==(const BlockStored&, const BlockStored&) = default;
};

struct BlockRemoved {
  std::vector<std::uint64_t> block_hashes;
  Medium medium = Medium::gpu;
  std::optional<std::uint32_t> group_idx;

  friend bool operator==(const BlockRemoved&, const BlockRemoved&) = default;
};

/// The engine's prefix cache was reset: every block of this publisher is gone.
struct AllBlocksCleared {
  friend bool operator==(const AllBlocksCleared&, const AllBlocksCleared&) = default;
};

using Event = std::variant<BlockStored, BlockRemoved, AllBlocksCleared>;

struct EventBatch {
  double ts = 0;
  std::vector<Event> events;
  std::optional<std::int64_t> data_parallel_rank;

  friend bool operator==(const EventBatch&, const EventBatch&) = default;
};

enum class Encoding : std::uint8_t { tagged_map, array };

/// Limits on what decode() accepts (a payload past them is an error, not an allocation).
struct DecodeLimits {
  std::size_t max_events = 1 << 20;
  std::size_t max_hashes = 1 << 22;  ///< over the whole batch
  std::size_t max_string = 4096;     ///< bytes of a session id, a lora name, a type name
};

/// The msgpack payload of `batch`, as vLLM's msgspec encoder writes it in `encoding`.
[[nodiscard]] std::string encode(const EventBatch& batch, Encoding encoding = Encoding::tagged_map);

/// The batch in `payload` (either encoding), or why not ("truncated at byte N", "expected ...").
[[nodiscard]] base::Result<EventBatch> decode(std::string_view payload, const DecodeLimits& limits = {});

/// The seq part: 8 bytes, big-endian, two's complement.
[[nodiscard]] std::string encode_seq(std::int64_t seq);
/// nullopt unless exactly 8 bytes.
[[nodiscard]] std::optional<std::int64_t> decode_seq(std::string_view part);

/// A session_id as the index keys it: the warden sends each thread's key as 16 lowercase hex digits, read
/// back as that key; any other id (another client's own) is hashed (XXH3-64); empty: 0 (no session).
[[nodiscard]] std::uint64_t session_key(std::string_view session_id);
/// The 16 lowercase hex digits the warden sends as a thread's session_id.
[[nodiscard]] std::string session_id_of(std::uint64_t key);

}  // namespace warden::protocol::kv
