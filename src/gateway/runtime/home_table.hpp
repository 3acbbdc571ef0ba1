// A model's conversation homes (its Router's session table) as the stores and the other wardens change
// them: restored at start, learned and adopted from the other wardens, their changes taken every second.
// A handle from ModelRuntime::homes(), valid while its runtime is; what routing itself does to the homes
// stays the Router's.
#pragma once

#include <cstdint>
#include <span>

#include "core/router.hpp"

namespace warden::gateway {

class HomeTable {
 public:
  explicit HomeTable(core::Router& router) : router_(router) {}

  // Each change of a home kept for take_session_changes() (the durable state, the shared state).
  void track_session_changes(bool on) { router_.track_session_changes(on); }
  [[nodiscard]] core::SessionChanges take_session_changes() { return router_.take_session_changes(); }
  // The homes stored before a restart.
  void import_sessions(std::span<const core::SessionRecord> entries, core::Time now) {
    router_.import_sessions(entries, now);
  }
  // What another warden knows of a conversation (core::Router's learn_home, adopt_home, seen_elsewhere).
  void learn_home(std::uint64_t session_hash, core::ReplicaIndex home, std::uint32_t prompt_tokens,
                  core::Time now) {
    router_.learn_home(session_hash, home, prompt_tokens, now);
  }
  void adopt_home(std::uint64_t session_hash, core::ReplicaIndex home, std::uint32_t prompt_tokens,
                  core::Time now) {
    router_.adopt_home(session_hash, home, prompt_tokens, now);
  }
  bool seen_elsewhere(std::uint64_t session_hash, core::ReplicaIndex home, std::uint64_t computed_at,
                      core::Time now) {
    return router_.seen_elsewhere(session_hash, home, computed_at, now);
  }

 private:
  core::Router& router_;
};

}  // namespace warden::gateway
