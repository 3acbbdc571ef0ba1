#include "core/shared_ids.hpp"

#include <algorithm>

#include "base/splitmix.hpp"

namespace warden::core {

namespace {

// A key of the id and the first message, never the id's own.
std::uint64_t combined(std::uint64_t session, std::uint64_t first) {
  const std::uint64_t key = base::splitmix64(session ^ base::splitmix64(first));
  return key == session ? key + 1 : key;
}

// 32 bits of the first message's digest, mixed so that digests apart in any bit stay apart, never the 0 of
// an empty place.
std::uint32_t digest_of(std::uint64_t first) {
  return static_cast<std::uint32_t>(base::splitmix64(first)) | 1;
}

// Ids forgotten for idleness per request at most: one request adds one id, so two keep up, and no
// request pays for a crowd that went idle together.
constexpr int expiries_per_request = 2;

// The index's salt: the session table holds the same ids, and its maps must not double on the same
// request as these (SlotIndex).
constexpr std::uint64_t index_salt = 0x5ad1d50f5e5510ULL;

}  // namespace

SharedIds::SharedIds(SharedIdsConfig config) : config_(config), index_(index_salt) {
  config_.max_ids = std::clamp<std::size_t>(config_.max_ids, 1, nil - 1);
}

std::uint64_t SharedIds::key(std::uint64_t session, std::uint64_t first, Time now) {
  if (first == 0) {
    return session;
  }
  latest_ = std::max(latest_, now);
  expire(latest_);
  const std::uint32_t digest = digest_of(first);
  Node& node = nodes_[find_or_insert(session, digest, latest_)];
  note(node, digest);
  return node.shared && digest != node.owner ? combined(session, first) : session;
}

std::uint64_t SharedIds::key_of(std::uint64_t session, std::uint64_t first) const {
  const std::uint32_t* slot = first == 0 ? nullptr : index_.find(session);
  if (slot == nullptr) {
    return session;
  }
  const Node& node = nodes_[*slot];
  return node.shared && digest_of(first) != node.owner ? combined(session, first) : session;
}

// The id's node, seen now and first in the list; a new one (owned by `digest`) in the place of the least
// recently seen id when the table is full, or of one idle beyond the TTL.
std::uint32_t SharedIds::find_or_insert(std::uint64_t session, std::uint32_t digest, Time now) {
  std::uint32_t slot = nil;
  if (const std::uint32_t* found = index_.find(session); found != nullptr) {
    slot = *found;
    list_.unlink(nodes_, slot);
    if (now - nodes_[slot].last_seen > config_.idle_ttl) {
      nodes_[slot] = Node{.session = session, .owner = digest};
    }
  } else {
    if (index_.size() >= config_.max_ids) {
      remove(list_.tail);
    }
    slot = nodes_.take();
    nodes_[slot] = Node{.session = session, .owner = digest};
    index_.insert(session, slot);
  }
  nodes_[slot].last_seen = now;
  list_.push_front(nodes_, slot);
  return slot;
}

void SharedIds::note(Node& node, std::uint32_t digest) {
  if (node.recent[node.last] == digest) {
    return;
  }
  // A first message seen before, after another one: two conversations take turns under the id (a
  // compaction replaces a conversation's first message for good).
  if (!node.shared && std::find(node.recent.begin(), node.recent.end(), digest) != node.recent.end()) {
    node.shared = true;
    ++shared_;
  }
  node.last = static_cast<std::uint8_t>((node.last + 1) % node.recent.size());
  node.recent[node.last] = digest;
}

void SharedIds::expire(Time now) {
  for (int i = 0; i < expiries_per_request && list_.tail != nil; ++i) {
    if (now - nodes_[list_.tail].last_seen <= config_.idle_ttl) {
      return;
    }
    remove(list_.tail);
  }
}

void SharedIds::remove(std::uint32_t slot) {
  list_.unlink(nodes_, slot);
  index_.erase(nodes_[slot].session);
  nodes_.release(slot);
}

std::size_t SharedIds::memory_bytes() const {
  return sizeof(*this) + nodes_.memory_bytes() + index_.memory_bytes();
}

}  // namespace warden::core
