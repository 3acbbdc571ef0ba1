// vLLM's KV cache event payloads: decode() never crashes and stays within its limits; a batch it accepts,
// written back in either encoding, decodes to itself; no strict prefix of an accepted payload decodes.
// Input: a limits byte, then the msgpack payload.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "protocol/kv_events.hpp"

namespace {

using namespace warden::protocol::kv;

// Small limits on some inputs, so the limit paths are reached.
DecodeLimits limits_for(std::uint8_t b) {
  DecodeLimits l;
  if (b & 1) {
    l.max_events = 1 + (b >> 4);
    l.max_hashes = 1 + (b >> 2);
    l.max_string = 1 + (b >> 1);
  }
  return l;
}

std::size_t total_hashes(const EventBatch& b) {
  std::size_t n = 0;
  for (const Event& e : b.events) {
    if (const auto* s = std::get_if<BlockStored>(&e)) {
      n += s->block_hashes.size();
    } else if (const auto* r = std::get_if<BlockRemoved>(&e)) {
      n += r->block_hashes.size();
    }
  }
  return n;
}

// The batch as it comes back from encode(): token ids are counted on decode and not kept, so none are
// written back; NaN timestamps compare by their bits.
bool same(EventBatch a, EventBatch b) {
  for (EventBatch* x : {&a, &b}) {
    for (Event& e : x->events) {
      if (auto* s = std::get_if<BlockStored>(&e)) {
        s->token_count = 0;
      }
    }
  }
  if (std::memcmp(&a.ts, &b.ts, sizeof a.ts) != 0) {
    return false;
  }
  a.ts = b.ts = 0;
  return a == b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  warden::fuzz::Input in(data, size);
  const DecodeLimits limits = limits_for(in.byte());
  const std::string_view payload = in.rest();
  const auto r = decode(payload, limits);
  if (!r) {
    FUZZ_CHECK(!r.error().empty());
    return 0;
  }
  FUZZ_CHECK(r->events.size() <= limits.max_events);
  FUZZ_CHECK(total_hashes(*r) <= limits.max_hashes);
  for (const Event& e : r->events) {
    if (const auto* s = std::get_if<BlockStored>(&e)) {
      FUZZ_CHECK(s->session_id.size() <= limits.max_string);
      FUZZ_CHECK(s->token_ids.empty());
    }
  }
  for (Encoding enc : {Encoding::tagged_map, Encoding::array}) {
    const auto again = decode(encode(*r, enc));
    FUZZ_CHECK(again.has_value());
    FUZZ_CHECK(same(*again, *r));
  }
  if (!payload.empty()) {
    FUZZ_CHECK(!decode(payload.substr(0, payload.size() - 1), limits));
  }
  return 0;
}
