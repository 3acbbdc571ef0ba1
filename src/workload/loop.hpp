// What a driver (bench in real time, simulate in virtual time) needs from a workload's closed loop: slots
// that become due, one request in flight per slot, and the end of each request reported back. Two loops
// implement it: ClosedLoop (chat sessions, the reference workload) and AgentLoop (coding agents);
// make_loop.hpp picks the one of a workload's kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workload/conversation.hpp"

namespace warden::workload {

// What became of a slot when its in-flight request ended.
struct TurnEnd {
  bool session_finished = false;        // that request was its session's last
  std::uint64_t session_index = 0;      // the session the request belonged to
  std::size_t turn = 0;                 // the request's turn in its conversation (0 = first message)
  std::optional<double> next_ready_at;  // when the slot's next request is due (none once stopped or idle)
  // The request ended an agent task with its final text reply: the task ran from task_started_at (when
  // its first request was handed out) to now. The claude-code workload has no tasks.
  bool task_finished = false;
  double task_started_at = 0.0;
  // The reply was its thread's final text: a task's last reply on the main thread, or the result a
  // subagent returns (its thread sends nothing more).
  bool final_text = false;
};

class Loop {
 public:
  virtual ~Loop() = default;

  // Slots whose request is due at or before `now`, in slot order; they are in flight from here on.
  virtual std::vector<std::size_t> take_ready(double now) = 0;
  // Earliest due time among slots not in flight; none when nothing is due or the loop is stopped.
  virtual std::optional<double> next_ready_at() const = 0;
  // The conversation whose request the slot sends (valid while the slot is in flight).
  virtual const Conversation& conversation(std::size_t slot) const = 0;
  virtual bool in_flight(std::size_t slot) const = 0;
  // The slot's request ended with `reply` / failed (the session is abandoned and replaced).
  virtual TurnEnd complete(std::size_t slot, double now, std::string reply) = 0;
  virtual TurnEnd fail(std::size_t slot, double now, double retry_delay) = 0;
  // End of the level: nothing further is handed out; in-flight requests may still end.
  virtual void stop() = 0;
  // The next level goes on with these sessions (a load tool that never restarts them): add new sessions up
  // to `sessions` in all, their first requests due at `now`. False where the loop cannot grow (then the
  // caller starts a new loop), or when `sessions` is fewer than it holds or it is stopped.
  virtual bool grow(std::size_t sessions, double now) {
    (void)sessions;
    (void)now;
    return false;
  }

  // The session (agent) a slot belongs to: 0 .. sessions() - 1.
  virtual std::size_t session_of(std::size_t slot) const { return slot; }
  // Whether that session is an interactive one (AgenticConfig::interactive): a person reads between tasks.
  virtual bool interactive(std::size_t session) const {
    (void)session;
    return false;
  }

  virtual std::size_t slots() const = 0;     // conversations that may be in flight at once
  virtual std::size_t sessions() const = 0;  // concurrency level: sessions (agents) held open
  virtual std::size_t in_flight_count() const = 0;
  virtual std::uint64_t sessions_started() const = 0;
  virtual std::uint64_t next_session_index() const = 0;
};

}  // namespace warden::workload
