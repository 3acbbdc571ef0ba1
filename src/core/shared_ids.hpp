#pragma once
// Session ids shared by several conversations. A fleet of headless agents may send one session id for
// many agents (each launched to continue one session, `claude -c` in a shared folder): each agent's
// conversation grows on its own, but to a warden keyed by the id they are one conversation, with one home
// and one task, and together they outgrow any replica. Each conversation's first message stays put while it
// grows (a compaction replaces it once), so an id whose main-thread requests come back to a first message
// after another one is shared: from then on each of its conversations is keyed by the id and its first
// message. Pure, no clock; bounded.

#include <array>
#include <cstddef>
#include <cstdint>

#include <boost/unordered/unordered_flat_map.hpp>

namespace warden::core {

class SharedIds {
 public:
  /// Ids remembered at most; past it the ids not (yet) found shared are forgotten.
  static constexpr std::size_t max_ids = 1'000'000;

  /// The key of a main-thread request of session `session` whose first message has digest `first`
  /// (0 = unknown: the session's own key), noting what it shows: `session` while the id is not found
  /// shared, else a key of the id and that first message.
  [[nodiscard]] std::uint64_t key(std::uint64_t session, std::uint64_t first);
  /// The same without noting anything (for a request already routed).
  [[nodiscard]] std::uint64_t key_of(std::uint64_t session, std::uint64_t first) const;

  /// Ids found shared so far.
  [[nodiscard]] std::size_t shared() const { return shared_; }

 private:
  // The digests of the last first messages an id's main-thread requests carried (their low 32 bits: 32
  // bytes an id in all), the latest at `last`.
  struct Seen {
    std::array<std::uint32_t, 4> recent{};
    std::uint8_t last = 0;
    bool shared = false;
  };

  boost::unordered_flat_map<std::uint64_t, Seen> ids_;
  std::size_t shared_ = 0;
};

}  // namespace warden::core
