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
std::size_t shard_of(std::uint64_t key, std::uint64_t salt) {
  return static_cast<std::size_t>(base::splitmix64(key ^ salt) >> kShardShift);
}

// Inserts into `map`; the entries it moved if that made it double, else 0.
std::size_t insert_into(boost::unordered_flat_map<std::uint64_t, std::uint32_t>& map, std::uint64_t key,
                        std::uint32_t slot) {
  const std::size_t buckets = map.bucket_count();
  map.emplace(key, slot);
  return map.bucket_count() != buckets ? map.size() - 1 : 0;
}

}  // namespace

SlotIndex::Map& SlotIndex::shard(std::uint64_t key) {
  return shards_[shard_of(key, salt_)];
}

void SlotIndex::insert(std::uint64_t key, std::uint32_t slot) {
  if (shards_.empty() && one_.size() >= kOneMap) {
    shards_.resize(kShards);  // empty maps: each allocates with its first entry
  }
  if (!one_.empty() && !shards_.empty()) {
    spread_step();
  }
  largest_move_ = std::max(largest_move_, insert_into(shards_.empty() ? one_ : shard(key), key, slot));
  ++size_;
}

// Moves up to kSpreadStep entries of the one map into the others (their maps may double on the way).
void SlotIndex::spread_step() {
  std::size_t moved = 0;
  for (std::size_t i = 0; i < kSpreadStep && !one_.empty(); ++i) {
    const auto it = one_.begin();
    moved += 1 + insert_into(shard(it->first), it->first, it->second);
    one_.erase(it);
  }
  largest_move_ = std::max(largest_move_, moved);
  if (one_.empty()) {
    one_ = Map{};  // its array, freed
  }
}

bool SlotIndex::erase(std::uint64_t key) {
  if ((shards_.empty() || shard(key).erase(key) == 0) && one_.erase(key) == 0) {
    return false;
  }
  --size_;
  return true;
}

void SlotIndex::clear() {
  one_ = Map{};
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
