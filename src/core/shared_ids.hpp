#pragma once
// Session ids shared by several conversations. A fleet of headless agents may send one session id for
// many agents (each launched to continue one session, `claude -c` in a shared folder): each agent's
// conversation grows on its own, but to a warden keyed by the id they are one conversation, with one home
// and one task, and together they outgrow any replica. Each conversation's first message stays put while it
// grows (a compaction replaces it once), so an id whose main-thread requests come back to a first message
// after another one is shared: from then on each of its other conversations is keyed by the id and its
// first message. The conversation the id was first seen with (its owner) keeps the id's own key: a
// request that borrows an id (a stranger who learnt it) never moves the conversation the id's home was
// placed for. Pure, no clock; bounded by count and idle time, O(1) per request whatever it holds.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/slab.hpp"
#include "core/slot_index.hpp"
#include "core/types.hpp"

namespace warden::core {

struct SharedIdsConfig {
  /// Ids remembered at most; past it the least recently seen is forgotten.
  std::size_t max_ids = 1'000'000;
  /// An id not seen for this long is forgotten (as the session table forgets its conversation).
  Time idle_ttl = std::chrono::minutes(30);
};

class SharedIds {
 public:
  explicit SharedIds(SharedIdsConfig config = {});

  /// The key of a main-thread request of session `session` whose first message has digest `first`
  /// (0 = unknown: the session's own key), noting what it shows at `now`: `session` while the id is not
  /// found shared or for its owner's first message, else a key of the id and that first message.
  [[nodiscard]] std::uint64_t key(std::uint64_t session, std::uint64_t first, Time now);
  /// The same without noting anything (for a request already routed).
  [[nodiscard]] std::uint64_t key_of(std::uint64_t session, std::uint64_t first) const;

  /// Ids found shared so far.
  [[nodiscard]] std::size_t shared() const { return shared_; }
  /// Ids remembered now.
  [[nodiscard]] std::size_t size() const { return index_.size(); }
  /// Bytes reserved by the table (slab + hash index), for memory accounting.
  [[nodiscard]] std::size_t memory_bytes() const;

 private:
  static constexpr std::uint32_t nil = 0xFFFFFFFFu;

  // One id: the digests of the last first messages its main-thread requests carried (their low 32 bits),
  // the latest at `last`, and its owner's; linked into the list of ids, most recently seen first.
  struct Node {
    std::uint64_t session = 0;
    Time last_seen{};
    std::array<std::uint32_t, 4> recent{};
    std::uint32_t owner = 0;
    std::uint32_t prev = nil;
    std::uint32_t next = nil;
    std::uint8_t last = 0;
    bool shared = false;
  };

  std::uint32_t find_or_insert(std::uint64_t session, std::uint32_t digest, Time now);
  void note(Node& node, std::uint32_t digest);
  void remove(std::uint32_t slot);
  // Forgets a bounded number of ids idle beyond the TTL, from the least recently seen end.
  void expire(Time now);

  SharedIdsConfig config_;
  SlotIndex index_;
  Slab<Node> nodes_;
  SlabList list_;
  Time latest_{};
  std::size_t shared_ = 0;
};

}  // namespace warden::core
