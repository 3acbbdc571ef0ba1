// encode(): an EventBatch as vLLM's msgspec encoder writes it. Tagged-map encoding: the structs'
// omit_defaults drops the fields that default to None when they are None (extra_keys, group_idx,
// kv_cache_spec_kind, kv_cache_spec_sliding_window, session_id, the batch's data_parallel_rank) and keeps
// the others even when nil; "type" first, then declaration order. Array encoding (array_like): msgspec
// writes every field, defaults included, so the arrays have a fixed length.

#include "protocol/kv_events.hpp"
#include "protocol/msgpack.hpp"

namespace warden::protocol::kv {

namespace {

class Encoder {
 public:
  Encoder(std::string& out, Encoding encoding) : w_(out), array_(encoding == Encoding::array) {}

  void batch(const EventBatch& b) {
    if (array_) {
      w_.array(3);
    } else {
      w_.map(b.data_parallel_rank ? 3 : 2);
      w_.str("ts");
    }
    w_.float64(b.ts);
    key("events");
    w_.array(b.events.size());
    for (const Event& e : b.events) {
      std::visit([this](const auto& ev) { event(ev); }, e);
    }
    if (array_ || b.data_parallel_rank) {
      key("data_parallel_rank");
      opt_int(b.data_parallel_rank);
    }
  }

 private:
  void key(std::string_view name) {
    if (!array_) {
      w_.str(name);
    }
  }

  // The struct header and its tag: [type, ... (n fields)] or {"type": type, ... (n fields)}.
  void head(std::string_view type, std::size_t fields) {
    if (array_) {
      w_.array(1 + fields);
    } else {
      w_.map(1 + fields);
      w_.str("type");
    }
    w_.str(type);
  }

  void event(const BlockStored& e) {
    const bool session = !e.session_id.empty();
    // 7 fields without a default, extra_keys (never sent), group_idx, kind, sliding window, session_id.
    const std::size_t fields =
        array_ ? 12 : 7 + (e.group_idx ? 1 : 0) + 1 + (e.sliding_window ? 1 : 0) + (session ? 1 : 0);
    head("BlockStored", fields);
    hashes(e.block_hashes);
    key("parent_block_hash");
    opt_uint(e.parent_block_hash);
    key("token_ids");
    w_.array(e.token_ids.size());
    for (std::uint32_t t : e.token_ids) {
      w_.uint(t);
    }
    key("block_size");
    w_.uint(e.block_size);
    key("lora_id");
    opt_int(e.lora_id);
    key("medium");
    w_.str(medium_name(e.medium));
    key("lora_name");
    opt_str(e.lora_name ? std::optional<std::string_view>(*e.lora_name) : std::nullopt);
    if (array_) {
      w_.nil();  // extra_keys
    }
    if (array_ || e.group_idx) {
      key("group_idx");
      opt_uint(e.group_idx);
    }
    key("kv_cache_spec_kind");
    w_.str(group_kind_name(e.kind));
    if (array_ || e.sliding_window) {
      key("kv_cache_spec_sliding_window");
      opt_uint(e.sliding_window);
    }
    if (array_ || session) {
      key("session_id");
      opt_str(session ? std::optional<std::string_view>(e.session_id) : std::nullopt);
    }
  }

  void event(const BlockRemoved& e) {
    head("BlockRemoved", array_ || e.group_idx ? 3 : 2);
    hashes(e.block_hashes);
    key("medium");
    w_.str(medium_name(e.medium));
    if (array_ || e.group_idx) {
      key("group_idx");
      opt_uint(e.group_idx);
    }
  }

  void event(const AllBlocksCleared&) { head("AllBlocksCleared", 0); }

  void hashes(const std::vector<std::uint64_t>& hs) {
    key("block_hashes");
    w_.array(hs.size());
    for (std::uint64_t h : hs) {
      w_.uint(h);
    }
  }

  template <class T>
  void opt_uint(const std::optional<T>& v) {
    if (v) {
      w_.uint(*v);
    } else {
      w_.nil();
    }
  }

  void opt_int(const std::optional<std::int64_t>& v) {
    if (v) {
      w_.sint(*v);
    } else {
      w_.nil();
    }
  }

  void opt_str(std::optional<std::string_view> v) {
    if (v) {
      w_.str(*v);
    } else {
      w_.nil();
    }
  }

  msgpack::Writer w_;
  bool array_;
};

}  // namespace

std::string encode(const EventBatch& batch, Encoding encoding) {
  std::string out;
  Encoder(out, encoding).batch(batch);
  return out;
}

}  // namespace warden::protocol::kv
