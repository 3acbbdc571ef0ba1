#include "protocol/kv_events.hpp"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/splitmix.hpp"

namespace warden::protocol::kv {
namespace {

using std::string_literals::operator""s;

// --- Bytes written by hand from the msgpack spec, as msgspec writes vLLM's structs ---------------------

// {"ts": 1.5, "events": [BlockStored{...}], "data_parallel_rank": 0}, the event a tagged map with "type"
// first and the None-defaulted fields left out (extra_keys, kv_cache_spec_sliding_window).
const std::string kStoredMap =
    "\x83"                                         // map of 3
    "\xa2ts\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00"s  // "ts": float64 1.5
    "\xa6"
    "events\x91"  // "events": array of 1
    "\x8b"        // map of 11
    "\xa4type\xab"
    "BlockStored"  //
    "\xac"
    "block_hashes\x92\x01\xcf\xff\xff\xff\xff\xff\xff\xff\xff"  // [1, 2**64-1]
    "\xb1parent_block_hash\xcd\x01\x2c"                         // 300 as uint16
    "\xa9token_ids\x94\x01\x02\x03\xcc\xc8"                     // [1, 2, 3, 200]
    "\xaa"
    "block_size\x02"     //
    "\xa7lora_id\xc0"    // nil
    "\xa6medium\xa3GPU"  //
    "\xa9lora_name\xc0"  //
    "\xa9group_idx\x00"  //
    "\xb2kv_cache_spec_kind\xae"
    "full_attention"  //
    "\xaasession_id\xb0"
    "0123456789abcdef"  //
    "\xb2"
    "data_parallel_rank\x00"s;

// [2.0, [["BlockRemoved", [7, bytes(9)], "CPU", 3]], 1]: the array encoding, one hash sent as bytes.
const std::string kRemovedArray =
    "\x93\xcb\x40\x00\x00\x00\x00\x00\x00\x00"s  // [2.0,
    "\x91\x94\xac"
    "BlockRemoved"                                           //  [["BlockRemoved",
    "\x92\x07\xc4\x09\xaa\x00\x00\x00\x00\x00\x00\x01\x02"s  //   [7, b"\xaa" + 6 zeros + b"\x01\x02"],
    "\xa3"
    "CPU\x03"  //   "CPU", 3]],
    "\x01"s;   //  1]

// {"ts": 0.0, "events": [{"type": "AllBlocksCleared"}]}: no rank (None, omitted).
const std::string kClearedMap =
    "\x82\xa2ts\xcb\x00\x00\x00\x00\x00\x00\x00\x00"s
    "\xa6"
    "events\x91\x81\xa4type\xb0"
    "AllBlocksCleared"s;

BlockStored stored_sample() {
  BlockStored s;
  s.block_hashes = {1, 0xFFFF'FFFF'FFFF'FFFFull};
  s.parent_block_hash = 300;
  s.token_ids = {1, 2, 3, 200};
  s.block_size = 2;
  s.medium = Medium::gpu;
  s.group_idx = 0;
  s.kind = GroupKind::full_attention;
  s.session_id = "0123456789abcdef";
  return s;
}

// What decode() gives back for `s`: tokens counted, not kept.
BlockStored as_decoded(BlockStored s) {
  s.token_count = static_cast<std::uint32_t>(s.token_ids.size());
  s.token_ids.clear();
  return s;
}

EventBatch rich_batch() {
  EventBatch b;
  b.ts = 1757500000.25;
  b.data_parallel_rank = 3;
  BlockStored s = stored_sample();
  s.lora_id = -5;
  s.lora_name = "adapter";
  s.group_idx = 2;
  s.kind = GroupKind::sliding_window;
  s.sliding_window = 4096;
  s.token_ids.assign(300, 70000);  // uint32 tokens, an array16
  b.events.emplace_back(s);
  BlockStored thin;  // a CPU offload store: one hash, nothing else
  thin.block_hashes = {0x8000'0000'0000'0000ull};
  thin.medium = Medium::cpu;
  b.events.emplace_back(thin);
  BlockRemoved r;
  r.block_hashes = {5, 1u << 20, 0xFFFF'FFFFull};
  r.medium = Medium::storage;
  r.group_idx = 1;
  b.events.emplace_back(r);
  b.events.emplace_back(AllBlocksCleared{});
  return b;
}

EventBatch as_decoded(EventBatch b) {
  for (Event& e : b.events) {
    if (auto* s = std::get_if<BlockStored>(&e)) {
      *s = as_decoded(*s);
    }
  }
  return b;
}

TEST(KvEventsTest, DecodesHandWrittenStoredMap) {
  const auto r = decode(kStoredMap);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->ts, 1.5);
  EXPECT_EQ(r->data_parallel_rank, 0);
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(std::get<BlockStored>(r->events[0]), as_decoded(stored_sample()));
}

TEST(KvEventsTest, EncodesTheHandWrittenBytesExactly) {
  EventBatch b;
  b.ts = 1.5;
  b.data_parallel_rank = 0;
  b.events.emplace_back(stored_sample());
  EXPECT_EQ(encode(b), kStoredMap);

  EventBatch cleared;
  cleared.events.emplace_back(AllBlocksCleared{});
  EXPECT_EQ(encode(cleared), kClearedMap);
}

TEST(KvEventsTest, DecodesHandWrittenRemovedArray) {
  const auto r = decode(kRemovedArray);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->ts, 2.0);
  EXPECT_EQ(r->data_parallel_rank, 1);
  ASSERT_EQ(r->events.size(), 1u);
  const auto& removed = std::get<BlockRemoved>(r->events[0]);
  EXPECT_EQ(removed.block_hashes, (std::vector<std::uint64_t>{7, 0x0102}));  // bytes: the last 8
  EXPECT_EQ(removed.medium, Medium::cpu);
  EXPECT_EQ(removed.group_idx, 3u);
}

TEST(KvEventsTest, DecodesHandWrittenClearedMap) {
  const auto r = decode(kClearedMap);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->data_parallel_rank, std::nullopt);
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(r->events[0]));
}

TEST(KvEventsTest, RoundTripsBothEncodings) {
  const EventBatch b = rich_batch();
  for (Encoding enc : {Encoding::tagged_map, Encoding::array}) {
    const auto r = decode(encode(b, enc));
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(*r, as_decoded(b));
  }
}

TEST(KvEventsTest, ArrayEncodingWritesEveryField) {
  EventBatch b;
  b.events.emplace_back(stored_sample());
  b.events.emplace_back(BlockRemoved{{9}, Medium::gpu, std::nullopt});
  const std::string bytes = encode(b, Encoding::array);
  // [ts, events, rank]: rank nil; BlockStored: the tag and 12 fields; BlockRemoved: the tag and 3.
  EXPECT_EQ(bytes.substr(0, 2), "\x93\xcb"s);
  EXPECT_NE(bytes.find("\x92\x9d\xab"
                       "BlockStored"s),
            std::string::npos);
  EXPECT_NE(bytes.find("\x94\xac"
                       "BlockRemoved\x91\x09\xa3GPU\xc0"s),
            std::string::npos);
  EXPECT_EQ(bytes.back(), '\xc0');
}

TEST(KvEventsTest, SignedAndWideIntegersAsHashes) {
  // ["BlockRemoved", [-1, -200, uint32 0x12345678, int64 min]] in an array batch.
  const std::string bytes =
      "\x92\xcb\x00\x00\x00\x00\x00\x00\x00\x00\x91\x92\xac"
      "BlockRemoved"s
      "\x94\xff\xd1\xff\x38\xce\x12\x34\x56\x78\xd3\x80\x00\x00\x00\x00\x00\x00\x00"s;
  const auto r = decode(bytes);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(std::get<BlockRemoved>(r->events[0]).block_hashes,
            (std::vector<std::uint64_t>{~0ull, static_cast<std::uint64_t>(-200), 0x12345678,
                                        0x8000'0000'0000'0000ull}));
  EXPECT_EQ(std::get<BlockRemoved>(r->events[0]).medium, Medium::gpu);  // absent: GPU
}

TEST(KvEventsTest, ShortBytesHashIsTheWholeValue) {
  // {"ts": 0, "events": [{"type": "BlockRemoved", "block_hashes": [b"\x01\x02"], "medium": nil}]}
  const std::string bytes =
      "\x82\xa2ts\x00\xa6"
      "events\x91\x83\xa4type\xac"
      "BlockRemoved"s
      "\xac"
      "block_hashes\x91\xc4\x02\x01\x02\xa6medium\xc0"s;
  const auto r = decode(bytes);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(std::get<BlockRemoved>(r->events[0]).block_hashes, std::vector<std::uint64_t>{0x0102});
}

// --- Unknown fields, types, kinds ---------------------------------------------------------------------

TEST(KvEventsTest, SkipsUnknownFieldsAndTypes) {
  // A future engine: "type" not first, new fields (one nested), an event type of its own.
  const std::string bytes =
      "\x84\xa2ts\xcb\x00\x00\x00\x00\x00\x00\x00\x00"s
      "\xa5"
      "extra\x81\xa1k\x92\x01\xa1x"s  // an unknown batch field
      "\xa6"
      "events\x92"s  // two events
      "\x82\xa4type\xaa"
      "BlockMoved\xa4"
      "from\x93\x01\x02\x03"s       // unknown type: skipped
      "\x85\xa8locality\xa5LOCAL"s  // unknown field, before the type
      "\xac"
      "block_hashes\x91\x05\xa4type\xac"
      "BlockRemoved"s
      "\xa6medium\xa4"
      "DISK\xa6nested\x81\xa1"
      "a\x91\x91\xc0"s  // unknown medium, nested value
      "\xb2"
      "data_parallel_rank\x02"s;
  const auto r = decode(bytes);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->events.size(), 1u);
  const auto& removed = std::get<BlockRemoved>(r->events[0]);
  EXPECT_EQ(removed.block_hashes, std::vector<std::uint64_t>{5});
  EXPECT_EQ(removed.medium, Medium::other);
  EXPECT_EQ(r->data_parallel_rank, 2);
}

TEST(KvEventsTest, GroupKindNames) {
  EXPECT_EQ(parse_group_kind("full_attention"), GroupKind::full_attention);
  EXPECT_EQ(parse_group_kind("mamba"), GroupKind::mamba);
  EXPECT_EQ(parse_group_kind("chunked_local_attention"), GroupKind::chunked_local);
  EXPECT_EQ(parse_group_kind("sink_full_attention"), GroupKind::full_attention);
  EXPECT_EQ(parse_group_kind("cross_attention"), GroupKind::other);
  EXPECT_FALSE(is_attention(GroupKind::other));
  EXPECT_FALSE(is_attention(GroupKind::mamba));
  EXPECT_TRUE(is_attention(GroupKind::mla_attention));
  for (GroupKind k : {GroupKind::full_attention, GroupKind::sliding_window, GroupKind::mla_attention,
                      GroupKind::chunked_local, GroupKind::mamba}) {
    EXPECT_EQ(parse_group_kind(group_kind_name(k)), k);
  }
  for (Medium m : {Medium::gpu, Medium::cpu, Medium::storage}) {
    EXPECT_EQ(parse_medium(medium_name(m)), m);
  }
}

TEST(KvEventsTest, UnknownKindIsKept) {
  BlockStored s = stored_sample();
  s.kind = GroupKind::mamba;
  EventBatch b;
  b.events.emplace_back(s);
  std::string bytes = encode(b);
  const std::string mamba = "\xa5mamba"s;
  bytes.replace(bytes.find(mamba), mamba.size(),
                "\xaf"
                "cross_attention"s);
  const auto r = decode(bytes);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(std::get<BlockStored>(r->events[0]).kind, GroupKind::other);
}

// The array encoding after extra_keys: [group_idx, kind, sliding window, session_id], or, from producers
// that add block_mm_infos, that list first and the rest shifted by one.
TEST(KvEventsTest, ArrayTailWithAndWithoutBlockMmInfos) {
  const std::string head = "\x92\x00\x91"s;  // [0, [event]]
  const std::string stored =
      "\xab"
      "BlockStored\x91\x05\xc0\x90\x00\xc0\xa3GPU\xc0\xc0"s;  // 8 fields
  const std::string plain = "\x9d"s + stored + "\x04\xa5mamba\xc0\xa2s1"s;
  const std::string shifted = "\x9e"s + stored + "\x91\xc0\x04\xa5mamba\xc0\xa2s1"s;
  const std::string shifted_nil = "\x9e"s + stored + "\xc0\x04\xc0\xc0\xa2s1"s;
  for (const std::string* event : {&plain, &shifted}) {
    const auto r = decode(head + *event);
    ASSERT_TRUE(r) << r.error();
    const auto& s = std::get<BlockStored>(r->events[0]);
    EXPECT_EQ(s.group_idx, 4u);
    EXPECT_EQ(s.kind, GroupKind::mamba);
    EXPECT_EQ(s.session_id, "s1");
  }
  const auto r = decode(head + shifted_nil);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(std::get<BlockStored>(r->events[0]).group_idx, 4u);
  EXPECT_EQ(std::get<BlockStored>(r->events[0]).session_id, "s1");
}

TEST(KvEventsTest, OlderShorterArrays) {
  // An engine from before tiers and groups: [ts, events] and BlockStored with 5 fields.
  const std::string bytes =
      "\x92\xcb\x00\x00\x00\x00\x00\x00\x00\x00\x91\x96\xab"
      "BlockStored"s
      "\x92\x01\x02\xc0\x92\x0a\x0b\x01\xc0"s;
  const auto r = decode(bytes);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->data_parallel_rank, std::nullopt);
  const auto& s = std::get<BlockStored>(r->events[0]);
  EXPECT_EQ(s.block_hashes, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(s.token_count, 2u);
  EXPECT_EQ(s.block_size, 1u);
  EXPECT_EQ(s.medium, Medium::gpu);
  EXPECT_EQ(s.kind, GroupKind::full_attention);
}

// --- Malformed input ----------------------------------------------------------------------------------

TEST(KvEventsTest, EveryTruncationIsAnError) {
  const EventBatch b = rich_batch();
  for (const std::string& whole : {encode(b), encode(b, Encoding::array), kStoredMap, kRemovedArray}) {
    for (std::size_t n = 0; n < whole.size(); ++n) {
      const auto r = decode(std::string_view(whole).substr(0, n));
      ASSERT_FALSE(r) << "prefix of " << n << " bytes decoded";
      EXPECT_FALSE(r.error().empty());
    }
  }
}

TEST(KvEventsTest, GarbageIsAnErrorWithAReason) {
  const std::vector<std::string> cases = {
      ""s,
      "\xc1"s,                  // never used
      "\x81\x01\x02"s,          // a key that is not a str
      "\xdd\xff\xff\xff\xff"s,  // 4 billion items in 5 bytes
      "\x92\xa1x\x90"s,         // ts not a number
      "\x92\x00\x91\x93\xab"
      "BlockStored\xa1x\x00"s,       // block_hashes not an array
      "\x82\xa2ts\x00\xa1x\x00"s,    // no events
      "\x92\x00\x90\x00"s,           // trailing bytes
      "\x92\x00\x91\x90"s,           // an event with no type
      "\x92\x00\x91\x91\x90"s,       // an event whose type is not a str
      "\x92\x00\x91\x81\xa1x\x00"s,  // a map event without "type"
  };
  for (const std::string& c : cases) {
    const auto r = decode(c);
    EXPECT_FALSE(r) << "decoded garbage of " << c.size() << " bytes";
    if (!r) {
      EXPECT_FALSE(r.error().empty());
    }
  }
  EXPECT_NE(decode("\x92\x00\x90\x00"s).error().find("trailing"), std::string::npos);
}

TEST(KvEventsTest, RandomAndMutatedBytesNeverCrash) {
  base::SplitMix64 rng(42);
  const std::string good = encode(rich_batch());
  for (int i = 0; i < 20000; ++i) {
    std::string s = good;
    const int flips = 1 + static_cast<int>(rng.next() % 4);
    for (int f = 0; f < flips; ++f) {
      s[rng.next() % s.size()] = static_cast<char>(rng.next());
    }
    (void)decode(s);
    std::string noise(rng.next() % 64, '\0');
    for (char& c : noise) {
      c = static_cast<char>(rng.next());
    }
    (void)decode(noise);
  }
}

TEST(KvEventsTest, Limits) {
  const std::string bytes = encode(rich_batch());
  DecodeLimits l;
  l.max_events = 3;
  EXPECT_FALSE(decode(bytes, l));
  l.max_events = 4;
  EXPECT_TRUE(decode(bytes, l));
  l = {};
  l.max_hashes = 5;  // the batch has 2 + 1 + 3
  EXPECT_FALSE(decode(bytes, l));
  l.max_hashes = 6;
  EXPECT_TRUE(decode(bytes, l));
  l = {};
  l.max_string = 15;  // session id of 16
  const auto r = decode(bytes, l);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("session_id"), std::string::npos);
  l.max_string = 16;
  EXPECT_TRUE(decode(bytes, l));
}

// --- seq and session keys -----------------------------------------------------------------------------

TEST(KvEventsTest, Seq) {
  EXPECT_EQ(encode_seq(0), std::string(8, '\0'));
  EXPECT_EQ(encode_seq(1), "\x00\x00\x00\x00\x00\x00\x00\x01"s);
  EXPECT_EQ(encode_seq(-1), std::string(8, '\xff'));
  for (std::int64_t s : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{258}, INT64_MAX, INT64_MIN}) {
    EXPECT_EQ(decode_seq(encode_seq(s)), s);
  }
  EXPECT_EQ(decode_seq("\x01\x02"), std::nullopt);
  EXPECT_EQ(decode_seq(std::string(9, '\0')), std::nullopt);
}

TEST(KvEventsTest, SessionKeys) {
  EXPECT_EQ(session_key(""), 0u);
  EXPECT_EQ(session_key("00000000000000ff"), 0xffu);
  EXPECT_EQ(session_id_of(0xffu), "00000000000000ff");
  for (std::uint64_t k : {1ull, 0xdeadbeefcafef00dull, ~0ull}) {
    EXPECT_EQ(session_key(session_id_of(k)), k);
  }
  const std::string uuid = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
  EXPECT_EQ(session_key(uuid), XXH3_64bits(uuid.data(), uuid.size()));
  EXPECT_EQ(session_key("00000000000000FF"), XXH3_64bits("00000000000000FF", 16));  // not lowercase
  EXPECT_EQ(session_key("00000000000000f"), XXH3_64bits("00000000000000f", 15));
}

}  // namespace
}  // namespace warden::protocol::kv
