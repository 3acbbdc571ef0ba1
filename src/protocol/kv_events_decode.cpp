// decode(): vLLM's EventBatch from msgpack, either encoding (kv_events.hpp). msgspec writes a tagged
// struct as a map whose first key is "type" (or, array_like, as an array whose first item is the class
// name, then the fields in declaration order); the batch likewise as {ts, events, data_parallel_rank} or
// [ts, events, rank]. Both are read through one field reader: an array's position names its field.

#include <algorithm>
#include <array>
#include <string>

#include "protocol/kv_events.hpp"
#include "protocol/msgpack.hpp"

namespace warden::protocol::kv {

namespace {

using msgpack::Kind;

// BlockStored's fields in declaration order (the array encoding's positions after the type); after
// extra_keys, some producers add block_mm_infos (see trailing_names()).
constexpr std::array<std::string_view, 8> kStoredHead = {"block_hashes", "parent_block_hash", "token_ids",
                                                         "block_size",   "lora_id",           "medium",
                                                         "lora_name",    "extra_keys"};
constexpr std::array<std::string_view, 4> kStoredTail = {"group_idx", "kv_cache_spec_kind",
                                                         "kv_cache_spec_sliding_window", "session_id"};
constexpr std::array<std::string_view, 3> kRemovedFields = {"block_hashes", "medium", "group_idx"};

bool is_int(Kind k) {
  return k == Kind::uint || k == Kind::sint;
}

class Decoder {
 public:
  Decoder(std::string_view payload, const DecodeLimits& limits) : in_(payload), limits_(limits) {}

  base::Result<EventBatch> run() {
    EventBatch batch;
    if (!top(batch)) {
      return base::Failure{error_};
    }
    if (!in_.at_end()) {
      return base::Failure{"trailing bytes after the batch at byte " + std::to_string(in_.offset())};
    }
    return batch;
  }

 private:
  // Records why at the current position; false, so a reader can `return fail(...)`.
  bool fail(std::string_view what) {
    const std::size_t at = in_.offset();
    const bool whole = in_.skip();  // a value that cannot be skipped is cut short (or not msgpack)
    in_.seek(at);
    error_ = std::string(whole ? "expected " : "truncated or invalid msgpack reading ") + std::string(what) +
             " at byte " + std::to_string(at);
    return false;
  }

  bool top(EventBatch& batch) {
    if (in_.peek() == Kind::map) {
      const auto n = in_.map();
      return n ? batch_map(*n, batch) : fail("the batch");
    }
    const auto n = in_.array();
    return n ? batch_array(*n, batch) : fail("the batch (a map or an array)");
  }

  bool batch_map(std::uint32_t n, EventBatch& batch) {
    bool ts = false;
    bool events = false;
    for (std::uint32_t i = 0; i < n; ++i) {
      const auto key = in_.str();
      if (!key) {
        return fail("a batch key");
      }
      if (*key == "ts") {
        ts = true;
        if (!timestamp(batch)) {
          return false;
        }
      } else if (*key == "events") {
        events = true;
        if (!event_list(batch)) {
          return false;
        }
      } else if (*key == "data_parallel_rank") {
        if (!opt_i64(batch.data_parallel_rank, "data_parallel_rank")) {
          return false;
        }
      } else if (!in_.skip()) {
        return fail("a batch value");
      }
    }
    if (!ts || !events) {
      error_ = ts ? "batch without events" : "batch without ts";
      return false;
    }
    return true;
  }

  bool batch_array(std::uint32_t n, EventBatch& batch) {
    if (n < 2) {
      error_ = "batch array of " + std::to_string(n) + " items (ts and events needed)";
      return false;
    }
    if (!timestamp(batch) || !event_list(batch)) {
      return false;
    }
    if (n >= 3 && !opt_i64(batch.data_parallel_rank, "data_parallel_rank")) {
      return false;
    }
    return skip_items(n > 3 ? n - 3 : 0);
  }

  bool timestamp(EventBatch& batch) {
    const auto ts = in_.number();
    if (!ts) {
      return fail("ts (a float)");
    }
    batch.ts = *ts;
    return true;
  }

  bool event_list(EventBatch& batch) {
    const auto n = in_.array();
    if (!n) {
      return fail("events (an array)");
    }
    if (*n > limits_.max_events) {
      error_ =
          "batch of " + std::to_string(*n) + " events (limit " + std::to_string(limits_.max_events) + ")";
      return false;
    }
    batch.events.reserve(*n);
    for (std::uint32_t i = 0; i < *n; ++i) {
      if (!event(batch)) {
        return false;
      }
    }
    return true;
  }

  bool skip_items(std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
      if (!in_.skip()) {
        return fail("an ignored value");
      }
    }
    return true;
  }

  bool event(EventBatch& batch) {
    const bool is_map = in_.peek() == Kind::map;
    const auto n = is_map ? in_.map() : in_.array();
    if (!n) {
      return fail("an event (a map or an array)");
    }
    return is_map ? event_map(*n, batch) : event_array(*n, batch);
  }

  // The event's type: msgspec writes "type" first; any other order costs one more pass over the map.
  // Leaves the reader after the type's value (`consumed` = 1) or at the first key (`consumed` = 0).
  bool map_type(std::uint32_t n, std::string_view& type, std::uint32_t& consumed) {
    const std::size_t start = in_.offset();
    for (std::uint32_t i = 0; i < n; ++i) {
      const auto key = in_.str();
      if (!key) {
        return fail("an event key (a str)");
      }
      if (*key == "type") {
        if (!name(type, "the event type")) {
          return false;
        }
        consumed = i == 0 ? 1 : 0;
        if (i > 0) {
          in_.seek(start);
        }
        return true;
      }
      if (!in_.skip()) {
        return fail("an event value");
      }
    }
    error_ = "event without a type at byte " + std::to_string(start);
    return false;
  }

  bool event_map(std::uint32_t n, EventBatch& batch) {
    std::string_view type;
    std::uint32_t consumed = 0;
    if (!map_type(n, type, consumed)) {
      return false;
    }
    if (type == "BlockStored") {
      return map_fields<BlockStored>(n - consumed, batch);
    }
    if (type == "BlockRemoved") {
      return map_fields<BlockRemoved>(n - consumed, batch);
    }
    if (type == "AllBlocksCleared") {
      batch.events.emplace_back(AllBlocksCleared{});
    }
    return skip_items(2 * std::uint64_t{n - consumed});  // a cleared event's fields, or an unknown event
  }

  template <class E>
  bool map_fields(std::uint32_t n, EventBatch& batch) {
    E event;
    bool hashes = false;
    for (std::uint32_t i = 0; i < n; ++i) {
      const auto key = in_.str();
      if (!key) {
        return fail("an event key (a str)");
      }
      hashes = hashes || *key == "block_hashes";
      if (*key == "type" ? !in_.skip() : !field(*key, event)) {
        return error_.empty() ? fail("an event value") : false;
      }
    }
    return finish(std::move(event), hashes, batch);
  }

  template <class E>
  bool finish(E&& event, bool hashes, EventBatch& batch) {
    if (!hashes) {
      error_ = "event without block_hashes before byte " + std::to_string(in_.offset());
      return false;
    }
    batch.events.emplace_back(std::forward<E>(event));
    return true;
  }

  bool event_array(std::uint32_t n, EventBatch& batch) {
    std::string_view type;
    if (n == 0) {
      return fail("an event type (an empty array)");
    }
    if (!name(type, "the event type")) {
      return false;
    }
    if (type == "BlockStored") {
      return stored_array(n - 1, batch);
    }
    if (type == "BlockRemoved") {
      return positional<BlockRemoved>(kRemovedFields, n - 1, batch);
    }
    if (type == "AllBlocksCleared") {
      batch.events.emplace_back(AllBlocksCleared{});
    }
    return skip_items(n - 1);
  }

  // Reads `n` items as the fields `names` in order (items past them are skipped).
  template <class E, std::size_t N>
  bool positional_into(const std::array<std::string_view, N>& names, std::uint32_t n, E& event) {
    for (std::uint32_t i = 0; i < n; ++i) {
      if (i >= N) {
        return skip_items(n - i);
      }
      if (!field(names[i], event)) {
        return error_.empty() ? fail("an event value") : false;
      }
    }
    return true;
  }

  template <class E, std::size_t N>
  bool positional(const std::array<std::string_view, N>& names, std::uint32_t n, EventBatch& batch) {
    E event;
    if (!positional_into(names, n, event)) {
      return false;
    }
    return finish(std::move(event), n >= 1, batch);
  }

  bool stored_array(std::uint32_t n, EventBatch& batch) {
    BlockStored event;
    const std::uint32_t head = std::min<std::uint32_t>(n, kStoredHead.size());
    if (!positional_into(kStoredHead, head, event)) {
      return false;
    }
    if (n > head && !stored_tail(n - head, event)) {
      return false;
    }
    return finish(std::move(event), n >= 1, batch);
  }

  // The items after extra_keys. Producers that add block_mm_infos (a list per block, or nil) put it first
  // and shift the rest by one; the kinds of the items tell which layout this is (see tail_shifted()).
  bool stored_tail(std::uint32_t n, BlockStored& event) {
    const std::size_t start = in_.offset();
    std::array<Kind, 4> kinds{};
    kinds.fill(Kind::invalid);
    for (std::uint32_t i = 0; i < n && i < kinds.size(); ++i) {
      kinds[i] = in_.peek();
      if (!in_.skip()) {
        return fail("an event value");
      }
    }
    in_.seek(start);
    std::uint32_t i = 0;
    if (tail_shifted(kinds)) {
      if (!in_.skip()) {
        return fail("block_mm_infos");
      }
      ++i;
    }
    return positional_into(kStoredTail, n - i, event);
  }

  // Unshifted: group_idx (int|nil), kind (str|nil), sliding window (int|nil), session_id (str|nil).
  // Shifted: block_mm_infos (array|nil), group_idx, kind, sliding window. An item whose kind only the
  // shifted layout allows at its position decides; all nil reads the same either way.
  static bool tail_shifted(const std::array<Kind, 4>& k) {
    return k[0] == Kind::array || is_int(k[1]) || k[2] == Kind::str || is_int(k[3]);
  }

  // --- fields -------------------------------------------------------------------------------------------

  bool field(std::string_view key, BlockStored& e) {
    if (key == "block_hashes") {
      return hashes(e.block_hashes);
    }
    if (key == "parent_block_hash") {
      return opt_hash(e.parent_block_hash);
    }
    if (key == "token_ids") {
      return tokens(e.token_count);
    }
    if (key == "block_size") {
      return u32(e.block_size, "block_size");
    }
    if (key == "lora_id") {
      return opt_i64(e.lora_id, "lora_id");
    }
    if (key == "medium") {
      return medium(e.medium);
    }
    if (key == "lora_name") {
      return opt_string(e.lora_name, "lora_name");
    }
    if (key == "group_idx") {
      return opt_u32(e.group_idx, "group_idx");
    }
    if (key == "kv_cache_spec_kind") {
      return group_kind(e.kind);
    }
    if (key == "kv_cache_spec_sliding_window") {
      return opt_u32(e.sliding_window, "kv_cache_spec_sliding_window");
    }
    if (key == "session_id") {
      std::optional<std::string> id;
      if (!opt_string(id, "session_id")) {
        return false;
      }
      e.session_id = id.value_or("");
      return true;
    }
    return in_.skip();  // extra_keys, block_mm_infos, and fields added after this was written
  }

  bool field(std::string_view key, BlockRemoved& e) {
    if (key == "block_hashes") {
      return hashes(e.block_hashes);
    }
    if (key == "medium") {
      return medium(e.medium);
    }
    if (key == "group_idx") {
      return opt_u32(e.group_idx, "group_idx");
    }
    return in_.skip();
  }

  bool hashes(std::vector<std::uint64_t>& out) {
    const auto n = in_.array();
    if (!n) {
      return fail("block_hashes (an array)");
    }
    total_hashes_ += *n;
    if (total_hashes_ > limits_.max_hashes) {
      error_ = "more than " + std::to_string(limits_.max_hashes) + " block hashes in the batch";
      return false;
    }
    out.resize(*n);
    for (std::uint32_t i = 0; i < *n; ++i) {
      if (!hash(out[i])) {
        return false;
      }
    }
    return true;
  }

  // An int (two's complement if negative), or bytes read as their low 64 bits: vLLM's
  // int.from_bytes(digest, "big") & (2**64 - 1), i.e. the last 8 bytes, big-endian.
  bool hash(std::uint64_t& out) {
    if (const auto v = in_.bits64()) {
      out = *v;
      return true;
    }
    if (const auto b = in_.bin()) {
      out = 0;
      for (char c : b->substr(b->size() > 8 ? b->size() - 8 : 0)) {
        out = out << 8 | static_cast<std::uint8_t>(c);
      }
      return true;
    }
    return fail("a block hash (an int or bytes)");
  }

  bool opt_hash(std::optional<std::uint64_t>& out) {
    if (in_.nil()) {
      out.reset();
      return true;
    }
    std::uint64_t h = 0;
    if (!hash(h)) {
      return false;
    }
    out = h;
    return true;
  }

  // token_ids are counted, not kept (each an int, or a pair of ints for EAGLE's bigrams).
  bool tokens(std::uint32_t& count) {
    const auto n = in_.array();
    if (!n) {
      return fail("token_ids (an array)");
    }
    for (std::uint32_t i = 0; i < *n; ++i) {
      if (!in_.skip()) {
        return fail("a token id");
      }
    }
    count = *n;
    return true;
  }

  bool u32(std::uint32_t& out, std::string_view what) {
    const auto v = in_.uint();
    if (!v || *v > UINT32_MAX) {
      return fail(what);
    }
    out = static_cast<std::uint32_t>(*v);
    return true;
  }

  bool opt_u32(std::optional<std::uint32_t>& out, std::string_view what) {
    if (in_.nil()) {
      out.reset();
      return true;
    }
    std::uint32_t v = 0;
    if (!u32(v, what)) {
      return false;
    }
    out = v;
    return true;
  }

  bool opt_i64(std::optional<std::int64_t>& out, std::string_view what) {
    if (in_.nil()) {
      out.reset();
      return true;
    }
    const auto v = in_.sint();
    if (!v) {
      return fail(what);
    }
    out = *v;
    return true;
  }

  // A str within limits.max_string, as a view into the payload.
  bool name(std::string_view& out, std::string_view what) {
    const auto s = in_.str();
    if (!s) {
      return fail(what);
    }
    if (s->size() > limits_.max_string) {
      error_ = std::string(what) + " of " + std::to_string(s->size()) + " bytes (limit " +
               std::to_string(limits_.max_string) + ")";
      return false;
    }
    out = *s;
    return true;
  }

  bool opt_string(std::optional<std::string>& out, std::string_view what) {
    if (in_.nil()) {
      out.reset();
      return true;
    }
    std::string_view s;
    if (!name(s, what)) {
      return false;
    }
    out.emplace(s);
    return true;
  }

  bool medium(Medium& out) {
    if (in_.nil()) {
      out = Medium::gpu;  // None: an engine from before tiers, all GPU
      return true;
    }
    std::string_view name_view;
    if (!name(name_view, "medium")) {
      return false;
    }
    out = parse_medium(name_view);
    return true;
  }

  bool group_kind(GroupKind& out) {
    if (in_.nil()) {
      out = GroupKind::full_attention;
      return true;
    }
    std::string_view s;
    if (!name(s, "kv_cache_spec_kind")) {
      return false;
    }
    out = parse_group_kind(s);
    return true;
  }

  msgpack::Reader in_;
  const DecodeLimits& limits_;
  std::uint64_t total_hashes_ = 0;
  std::string error_;
};

}  // namespace

base::Result<EventBatch> decode(std::string_view payload, const DecodeLimits& limits) {
  return Decoder(payload, limits).run();
}

}  // namespace warden::protocol::kv
