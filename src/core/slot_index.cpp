#include "core/slot_index.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "base/splitmix.hpp"

namespace warden::core {

namespace {

constexpr int kShardShift = 64 - std::countr_zero(SlotIndex::kShards);
static_assert(std::has_single_bit(SlotIndex::kShards));

// Mixed first: keys a test or a client makes small or alike still spread.
std::size_t shard_of(std::uint64_t key) {
  return static_cast<std::size_t>(base::splitmix64(key) >> kShardShift);
}

}  // namespace

SlotIndex::Map& SlotIndex::map_of(std::uint64_t key) {
  return shards_.empty() ? one_ : shards_[shard_of(key)];
}

void SlotIndex::insert(std::uint64_t key, std::uint32_t slot) {
  if (shards_.empty() && one_.size() >= kOneMap) {
    spread();
  }
  Map& map = map_of(key);
  const std::size_t buckets = map.bucket_count();
  map.emplace(key, slot);
  ++size_;
  if (map.bucket_count() != buckets) {
    largest_move_ = std::max(largest_move_, map.size() - 1);  // the map doubled
  }
}

// The one map's entries into the shards, once: kOneMap entries moved.
void SlotIndex::spread() {
  shards_.resize(kShards);
  for (Map& map : shards_) {
    map.reserve(2 * kOneMap / kShards);
  }
  for (const auto& [key, slot] : one_) {
    shards_[shard_of(key)].emplace(key, slot);
  }
  largest_move_ = std::max(largest_move_, one_.size());
  one_ = Map{};
}

bool SlotIndex::erase(std::uint64_t key) {
  if (map_of(key).erase(key) == 0) {
    return false;
  }
  --size_;
  return true;
}

void SlotIndex::clear() {
  one_.clear();
  shards_.clear();
  size_ = 0;
}

std::size_t SlotIndex::memory_bytes() const {
  std::size_t buckets = one_.bucket_count();
  for (const Map& map : shards_) {
    buckets += map.bucket_count();
  }
  return shards_.capacity() * sizeof(Map) + buckets * (sizeof(std::pair<std::uint64_t, std::uint32_t>) + 1);
}

}  // namespace warden::core
