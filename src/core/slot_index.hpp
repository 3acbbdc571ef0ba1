#pragma once
// A hash index from 64-bit keys to slots of a slab (the session table's, the shared-id table's) whose
// growth never stalls a request. A flat hash map doubles by moving every entry at once and freeing its old
// array: at a million entries that is tens of milliseconds of the one I/O thread, taken from whichever
// request crossed the line. Here, past kOneMap entries, the entries are spread over kShards maps by their
// key: each one doubles on its own, moving at most a 256th of the entries (at the tables' bound of a
// million, 3,360 entries and 0.1 MiB), so no request pays for more. Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

namespace warden::core {

class SlotIndex {
 public:
  /// Up to this many entries, one map (moving them all takes well under a millisecond).
  static constexpr std::size_t kOneMap = 4'096;
  /// Maps past it.
  static constexpr std::size_t kShards = 256;

  /// The slot of `key`, or nullptr. Valid until the next insert or erase.
  [[nodiscard]] std::uint32_t* find(std::uint64_t key) {
    Map& map = map_of(key);
    const auto it = map.find(key);
    return it != map.end() ? &it->second : nullptr;
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
  /// Whether the entries are spread over kShards maps.
  [[nodiscard]] bool sharded() const { return !shards_.empty(); }
  /// The most entries one insert has moved so far (a map that doubles moves all of its own).
  [[nodiscard]] std::size_t largest_move() const { return largest_move_; }
  /// Bytes reserved: one slot and one metadata byte per bucket of each map.
  [[nodiscard]] std::size_t memory_bytes() const;

 private:
  using Map = boost::unordered_flat_map<std::uint64_t, std::uint32_t>;
  Map& map_of(std::uint64_t key);
  void spread();

  Map one_;                  // the entries, until they are spread
  std::vector<Map> shards_;  // then, by the key's mixed top bits
  std::size_t size_ = 0;
  std::size_t largest_move_ = 0;
};

}  // namespace warden::core
