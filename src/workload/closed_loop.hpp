// The closed loop of one concurrency level as a pure state machine over caller-supplied time, so the same
// logic runs in real time (bench: wall clock x time scale) and in virtual time (simulate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workload/loop.hpp"
#include "workload/workload.hpp"

namespace warden::workload {

// N slots, each always holding one session. A session's next turn becomes due `think_time` after its
// previous turn ended; a finished (or failed) session is replaced by a new one with the next session index.
// Usage: take_ready(now) hands out due turns (the caller sends conversation(slot)); complete()/fail()
// report their end; next_ready_at() tells a driver when to call take_ready() again.
class ClosedLoop : public Loop {
 public:
  // `workload` must outlive the loop. The N first turns are due at `now` (spread over the workload's
  // `stagger` seconds if set). Session indices start at
  // `first_session_index`, so a second pass can replay the same prompts by starting from the same index.
  ClosedLoop(const Workload& workload, std::size_t sessions, double now,
             std::uint64_t first_session_index = 0);

  // Slots whose turn is due at or before `now`, in slot order; they are in flight from here on.
  std::vector<std::size_t> take_ready(double now) override;
  // Earliest due time among slots not in flight; none when every slot is in flight or the loop is stopped.
  std::optional<double> next_ready_at() const override;

  const Conversation& conversation(std::size_t slot) const override { return slots_.at(slot).conversation; }
  bool in_flight(std::size_t slot) const override { return slots_.at(slot).in_flight; }

  // The slot's turn ended with `reply` (appended to the history as an agent does).
  TurnEnd complete(std::size_t slot, double now, std::string reply) override;
  // The slot's turn failed: the session is abandoned and replaced after max(think_time, retry_delay).
  TurnEnd fail(std::size_t slot, double now, double retry_delay) override;
  TurnEnd fail(std::size_t slot, double now) { return fail(slot, now, 0.0); }

  // End of the level: no further turns are handed out; in-flight turns may still complete or fail.
  void stop() override { stopped_ = true; }
  // Adds new sessions (the next session indices, due at `now`) up to `sessions` slots in all.
  bool grow(std::size_t sessions, double now) override;
  bool stopped() const { return stopped_; }

  std::size_t slots() const override { return slots_.size(); }
  std::size_t sessions() const override { return slots_.size(); }
  std::size_t in_flight_count() const override { return in_flight_; }
  std::uint64_t sessions_started() const override { return next_session_index_ - first_session_index_; }
  std::uint64_t sessions_finished() const { return sessions_finished_; }
  std::uint64_t sessions_failed() const { return sessions_failed_; }
  std::uint64_t next_session_index() const override { return next_session_index_; }

 private:
  struct Slot {
    Conversation conversation;
    double ready_at = 0.0;
    bool in_flight = false;
  };

  Slot& in_flight_slot(std::size_t slot);
  void replace(Slot& s, double ready_at);

  const Workload& workload_;
  std::vector<Slot> slots_;
  std::uint64_t first_session_index_;
  std::uint64_t next_session_index_;
  std::uint64_t sessions_finished_ = 0;
  std::uint64_t sessions_failed_ = 0;
  std::size_t in_flight_ = 0;
  bool stopped_ = false;
};

}  // namespace warden::workload
