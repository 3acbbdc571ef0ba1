// The agentic workload's closed loop: N coding agents, each always running one session as a tree of
// threads, as Claude Code runs them (spec: "Agents are trees of threads"):
// - a task starts with a user prompt on the main thread and ends with its final text reply; in between the
//   main thread runs a drawn number of tool rounds (an assistant reply with one or several tool calls, then
//   a user message with their results after the tools' drawn run time);
// - in some tasks one round calls the Agent tool instead: 1 or 2 subagents start at once, in the
//   background, each a thread with its own X-Claude-Code-Agent-Id, its type's system prompt and tools (the
//   same in every session), its own tool rounds, and a report the main thread receives; the main thread
//   goes on meanwhile and waits for them only before its final reply;
// - a thread whose history nears the context window is compacted: one request asks for a summary, then the
//   history is replaced by it (system prompt and tools unchanged);
// - between tasks the user reads (think time); after `tasks` tasks the session ends and a new one starts
//   (with its own session id, or the agent's shared one: AgenticConfig::session_keys).
// Every count, size and time is drawn from the workload's seed per session and thread, so the same seed
// gives the same conversations whatever the order in which replies arrive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/splitmix.hpp"
#include "workload/loop.hpp"
#include "workload/workload.hpp"

namespace warden::workload {

class AgentLoop : public Loop {
 public:
  // `agents` headless agents and the workload's interactive ones after them (AgenticConfig::interactive),
  // each with 1 + max_subagents slots (slot = agent x width + thread; thread 0 = main).
  AgentLoop(const Workload& workload, std::size_t agents, double now, std::uint64_t first_session_index);

  std::vector<std::size_t> take_ready(double now) override;
  std::optional<double> next_ready_at() const override;
  const Conversation& conversation(std::size_t slot) const override { return thread(slot).conversation; }
  bool in_flight(std::size_t slot) const override { return thread(slot).in_flight; }
  TurnEnd complete(std::size_t slot, double now, std::string reply) override;
  // A failed request abandons its whole session; the agent starts a new one after `retry_delay` (or the
  // think time), once none of the old session's requests is in flight.
  TurnEnd fail(std::size_t slot, double now, double retry_delay) override;
  void stop() override { stopped_ = true; }

  std::size_t session_of(std::size_t slot) const override { return slot / width_; }
  bool interactive(std::size_t session) const override { return session >= headless_; }

  std::size_t slots() const override { return agents_.size() * width_; }
  std::size_t sessions() const override { return agents_.size(); }
  std::size_t in_flight_count() const override { return in_flight_; }
  std::uint64_t sessions_started() const override { return next_session_index_ - first_session_index_; }
  std::uint64_t next_session_index() const override { return next_session_index_; }

  // What happened so far (tests, docs).
  struct Counts {
    std::uint64_t tasks_finished = 0;
    std::uint64_t subagents_started = 0;
    std::uint64_t compactions = 0;
    std::uint64_t sessions_finished = 0;
  };
  const Counts& counts() const { return counts_; }
  // Tokens of a slot's conversation as the workload counts them (prefix + history, estimated).
  std::size_t history_tokens(std::size_t slot) const { return thread(slot).tokens; }

 private:
  struct Thread {
    Conversation conversation;
    base::SplitMix64 rng{0};  // this thread's draws
    double ready_at = 0.0;
    bool active = false;  // has a request due or in flight
    bool in_flight = false;
    bool orphan = false;          // its session was abandoned while this request was in flight
    bool compacting = false;      // the request in flight asks for a summary
    std::size_t rounds_left = 0;  // tool rounds before the final reply
    std::size_t tokens = 0;       // estimated prompt tokens
    std::size_t results = 0;      // tool results written (names their text streams)
  };
  struct Agent {
    std::uint64_t session_index = 0;
    std::size_t task = 0;
    std::optional<double> task_started;
    std::size_t subagent_round = 0;  // the main thread's rounds_left at which it starts subagents (0 = none)
    std::size_t running = 0;         // subagents running
    std::size_t serial = 0;          // subagents started in this session
    std::vector<std::string> reports;
    bool waiting = false;  // the main thread waits for its subagents before its final reply
    std::optional<double> restart_at;
  };

  const Thread& thread(std::size_t slot) const { return threads_.at(slot); }
  Thread& main_of(std::size_t agent) { return threads_[agent * width_]; }
  void start_session(std::size_t agent, double ready_at);
  void start_task(std::size_t agent, double ready_at);
  void start_subagent(std::size_t agent, std::size_t type, double now);
  void complete_main(std::size_t agent, std::string reply, double now, TurnEnd& end);
  void complete_subagent(std::size_t slot, std::string reply, double now, TurnEnd& end);
  // One tool round of a thread: its reply with `calls`, then the results the agent sends back.
  void tool_round(Thread& t, std::string reply, std::vector<ToolCall> calls, double now);
  std::vector<ToolCall> draw_calls(Thread& t);
  // Tokens each of `results_left` tool results may take so that the thread's next request fits the window.
  std::size_t results_room(const Thread& t, std::size_t results_left) const;
  void deliver_reports(std::size_t agent);
  void compact(Thread& t);
  bool needs_compaction(const Thread& t) const;
  // The slot's request is back: none when it belonged to an abandoned session (then it ends nothing).
  std::optional<TurnEnd> land(std::size_t slot);
  void abandon(std::size_t agent, double restart_at);
  void maybe_restart(std::size_t agent);
  std::size_t prefix_tokens(const Conversation& c) const;
  std::string text(std::uint64_t tag, const Thread& t, std::size_t index, std::size_t tokens) const;

  const Workload& workload_;
  const AgenticConfig& config_;
  std::size_t width_;
  std::size_t headless_;  // agents 0 .. headless_ - 1; the interactive ones after them
  std::vector<Agent> agents_;
  std::vector<Thread> threads_;
  std::uint64_t first_session_index_;
  std::uint64_t next_session_index_;
  std::size_t in_flight_ = 0;
  bool stopped_ = false;
  Counts counts_;
};

// A subagent's X-Claude-Code-Agent-Id as the real client sends it: 'a' and 16 hex digits, fixed by the
// seed, the session and the subagent's serial number in it.
std::string agent_id(std::uint64_t seed, std::uint64_t session_index, std::size_t serial);

}  // namespace warden::workload
