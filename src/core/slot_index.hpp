#pragma once
// A hash index from 64-bit keys to slots of a slab (the session table's, the shared-id table's) whose
// growth never stalls a request. A flat hash map doubles by moving every entry at once and freeing its old
// array: at a million entries that is tens of milliseconds of the one I/O thread, taken from whichever
// request crossed the line. Here, past kOneMap entries, the entries are spread over kShards maps by their
// key, kSpreadStep of them per insert: each map doubles on its own, moving at most a 1,024th of the
// entries (at the tables' bound of a million, about 900 entries and 16 KiB), so no request pays for more.
// Tables that hold the same keys (the session table, the shared-id table, the tasks under way) choose
// their maps with different salts: their maps double on different requests, not on the same one.
// Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

namespace warden::core {

class SlotIndex {
 public:
  /// Up to this many entries, one map (moving them all takes a few tens of microseconds).
  static constexpr std::size_t kOneMap = 1'024;
  /// Maps past it.
  static constexpr std::size_t kShards = 1'024;
  /// Entries of the one map moved into the others per insert, once past kOneMap, until none is left.
  static constexpr std::size_t kSpreadStep = 32;

  /// `salt` chooses which keys share a map (any value; two indexes of the same keys: two values).
  explicit SlotIndex(std::uint64_t salt = 0) : salt_(salt) {}

  /// The slot of `key`, or nullptr. Valid until the next insert or erase.
  [[nodiscard]] std::uint32_t* find(std::uint64_t key) {
    if (!shards_.empty()) {
      Map& map = shard(key);
      if (const auto it = map.find(key); it != map.end()) {
        return &it->second;
      }
      if (one_.empty()) {
        return nullptr;
      }
    }
    const auto it = one_.find(key);  // before the spread, or an entry not moved yet
    return it != one_.end() ? &it->second : nullptr;
  }
  [[nodiscard]] const std::uint32_t* find(std::uint64_t key) const {
    return const_cast<SlotIndex*>(this)->find(key);
  }
  [[nodiscard]] bool contains(std::uint64_t key) const { return find(key) != nullptr; }
  /// Adds `key` (which must be absent) with `slot`.
  void insert(std::uint64_t key, std::uint32_t slot);
  /// Forgets `key`; returns whether it was there.
  bool erase(std::uint64_t key);
  void clear();

  [[nodiscard]] std::size_t size() const { return size_; }
  /// Whether the entries are spread (or being spread) over kShards maps.
  [[nodiscard]] bool sharded() const { return !shards_.empty(); }
  /// The most entries one insert has moved so far (a map that doubles moves all of its own; a step of the
  /// spread, kSpreadStep).
  [[nodiscard]] std::size_t largest_move() const { return largest_move_; }
  /// Bytes reserved: one slot and one metadata byte per bucket of each map.
  [[nodiscard]] std::size_t memory_bytes() const;

 private:
  using Map = boost::unordered_flat_map<std::uint64_t, std::uint32_t>;
  Map& shard(std::uint64_t key);
  void spread_step();

  std::uint64_t salt_;
  Map one_;                  // the entries, until they are spread
  std::vector<Map> shards_;  // then, by the key's mixed top bits
  std::size_t size_ = 0;
  std::size_t largest_move_ = 0;
};

}  // namespace warden::core
