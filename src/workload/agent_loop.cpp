#include "workload/agent_loop.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "engine/tokenizer.hpp"
#include "workload/text.hpp"
#include "workload/tools.hpp"

namespace warden::workload {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
// Tokens a tool_use block adds to the prompt besides its arguments (name, id, template markers).
constexpr std::size_t kCallTokens = 40;
// Tokens of a thread's window kept free of tool results: the estimate leaves out template markers.
constexpr std::size_t kWindowMargin = 1024;
// Tokens of the instruction a compaction request ends with.
constexpr std::size_t kCompactTokens = 150;
// Session indices of the shared keys (AgenticConfig::session_keys) start this far past a level's first.
constexpr std::uint64_t kSharedKeys = std::uint64_t{1} << 40U;
// The serial number a main thread's own agent id is drawn with (subagents count from 0).
constexpr std::size_t kMainThreadSerial = std::size_t{1} << 30U;

// Text streams of this loop; distinct from the workload's own tags.
enum AgentTag : std::uint64_t {
  kThreadTag = 101,
  kTaskTag = 102,
  kResultTag = 103,
  kReportTag = 104,
  kSummaryTag = 105,
  kCompactTag = 106,
  kAgentIdTag = 107,
  kInstructionTag = 108,
};

double unit(base::SplitMix64& rng) {
  return static_cast<double>(rng.next() >> 11U) * 0x1.0p-53;
}

// Geometric on 1, 2, ... with the given mean, capped.
std::size_t draw_count(base::SplitMix64& rng, double mean, std::size_t max) {
  if (mean <= 1.0) {
    return 1;
  }
  const double p = 1.0 / mean;
  const double u = std::max(unit(rng), 1e-12);
  const double n = 1.0 + std::floor(std::log(u) / std::log1p(-p));
  return static_cast<std::size_t>(std::clamp(n, 1.0, static_cast<double>(std::max<std::size_t>(max, 1))));
}

// Log-normal with the given median and sigma 1, capped.
double draw_lognormal(base::SplitMix64& rng, double median, double max) {
  const double u1 = std::max(unit(rng), 1e-12);
  const double u2 = unit(rng);
  const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  return std::min(median * std::exp(normal), max);
}

Message user_text(std::string text) {
  return Message{Role::user, std::move(text), {}, {}};
}

}  // namespace

std::string agent_id(std::uint64_t seed, std::uint64_t session_index, std::size_t serial) {
  base::SplitMix64 rng(stream_seed(seed, kAgentIdTag, session_index, serial));
  return fmt::format("a{:016x}", rng.next());
}

AgentLoop::AgentLoop(const Workload& workload, std::size_t agents, double now,
                     std::uint64_t first_session_index)
    : workload_(workload),
      config_(workload.config().agentic),
      width_(1 + workload.config().agentic.max_subagents),
      headless_(agents),
      first_session_index_(first_session_index),
      next_session_index_(first_session_index) {
  const std::size_t all = agents + config_.interactive;
  agents_.resize(all);
  threads_.resize(all * width_);
  const double stagger = workload.config().stagger;
  for (std::size_t a = 0; a < all; ++a) {
    start_session(a, now + stagger * static_cast<double>(a) / static_cast<double>(all));
  }
}

std::size_t AgentLoop::prefix_tokens(const Conversation& c) const {
  return c.prefix == Prefix::main ? workload_.config().system_tokens + config_.tools_tokens
                                  : config_.subagent_system_tokens + config_.subagent_tools_tokens;
}

std::string AgentLoop::text(std::uint64_t tag, const Thread& t, std::size_t index, std::size_t tokens) const {
  const Conversation& c = t.conversation;
  // One stream per (session, thread, index): the thread is named by its agent id's hash (0 = main).
  const std::uint64_t thread_key = c.agent_id.empty() ? 0 : XXH3_64bits(c.agent_id.data(), c.agent_id.size());
  return workload_.text(
      stream_seed(workload_.config().seed, tag, c.session_index, thread_key ^ (index << 1U)), tokens);
}

void AgentLoop::start_session(std::size_t agent, double ready_at) {
  Agent& a = agents_[agent];
  a = Agent{};
  a.session_index = next_session_index_++;
  for (std::size_t k = 0; k < width_; ++k) {
    threads_[agent * width_ + k] = Thread{};
  }
  Thread& m = main_of(agent);
  m.conversation.session_index = a.session_index;
  m.conversation.session_id = session_id(workload_.config().seed, a.session_index);
  m.conversation.interactive = interactive(agent);
  if (config_.session_keys > 0) {
    // A shared key: its own index space, apart from the sessions' (a level's sessions start at its first
    // index, so each level has its own keys).
    m.conversation.session_id = session_id(workload_.config().seed,
                                           first_session_index_ + kSharedKeys + agent % config_.session_keys);
    if (config_.agent_threads) {
      m.conversation.agent_id = agent_id(workload_.config().seed, a.session_index, kMainThreadSerial);
    }
  }
  m.rng = base::SplitMix64(stream_seed(workload_.config().seed, kThreadTag, a.session_index));
  m.tokens = prefix_tokens(m.conversation);
  start_task(agent, ready_at);
}

void AgentLoop::start_task(std::size_t agent, double ready_at) {
  Agent& a = agents_[agent];
  Thread& m = main_of(agent);
  // The session's first prompt carries the project's context (first_tokens); later ones are typed.
  const std::size_t tokens = a.task == 0 ? workload_.config().first_tokens : config_.task_tokens;
  m.conversation.messages.push_back(user_text(text(kTaskTag, m, a.task, tokens)));
  m.tokens += tokens;
  m.rounds_left = draw_count(m.rng, config_.rounds_mean, config_.rounds_max);
  // Subagents start at one round with at least one round after it, so the main thread goes on meanwhile.
  a.subagent_round = 0;
  if (unit(m.rng) < config_.subagent_share && m.rounds_left >= 2 && config_.max_subagents > 0) {
    a.subagent_round = 2 + m.rng.below(m.rounds_left - 1);
  }
  m.active = true;
  m.ready_at = ready_at;
}

std::vector<std::size_t> AgentLoop::take_ready(double now) {
  std::vector<std::size_t> ready;
  if (stopped_) {
    return ready;
  }
  for (std::size_t slot = 0; slot < threads_.size(); ++slot) {
    Thread& t = threads_[slot];
    if (!t.active || t.in_flight || t.ready_at > now) {
      continue;
    }
    Agent& a = agents_[slot / width_];
    if (slot % width_ == 0 && !a.task_started) {
      a.task_started = now;
    }
    if (needs_compaction(t)) {
      // The client asks for a summary of the history first (one more request of the thread).
      t.compacting = true;
      t.conversation.messages.push_back(user_text(text(kCompactTag, t, 0, kCompactTokens)));
    }
    t.in_flight = true;
    ++in_flight_;
    ready.push_back(slot);
  }
  return ready;
}

std::optional<double> AgentLoop::next_ready_at() const {
  std::optional<double> next;
  if (stopped_) {
    return next;
  }
  for (const Thread& t : threads_) {
    if (t.active && !t.in_flight && t.ready_at < kNever && (!next || t.ready_at < *next)) {
      next = t.ready_at;
    }
  }
  return next;
}

bool AgentLoop::needs_compaction(const Thread& t) const {
  return static_cast<double>(t.tokens) > config_.compact_at * static_cast<double>(config_.context_window);
}

void AgentLoop::compact(Thread& t) {
  Conversation& c = t.conversation;
  ++c.compactions;
  ++counts_.compactions;
  t.compacting = false;
  c.messages.clear();
  c.messages.push_back(user_text(text(kSummaryTag, t, c.compactions, config_.summary_tokens)));
  t.tokens = prefix_tokens(c) + config_.summary_tokens;
}

std::vector<ToolCall> AgentLoop::draw_calls(Thread& t) {
  std::size_t n = 1;
  if (unit(t.rng) < config_.parallel_share) {
    n = 2 + t.rng.below(config_.parallel_max - 1);
  }
  std::vector<ToolCall> calls;
  for (std::size_t i = 0; i < n; ++i) {
    calls.push_back(draw_tool_call(t.rng));
  }
  return calls;
}

std::size_t AgentLoop::results_room(const Thread& t, std::size_t results_left) const {
  // Room for the reply, and for what the estimate misses (message markers, tool JSON).
  const std::size_t reserved = t.tokens + workload_.config().max_output + kWindowMargin;
  const std::size_t room = config_.context_window > reserved ? config_.context_window - reserved : 0;
  return std::max<std::size_t>(room / std::max<std::size_t>(results_left, 1), 1);
}

void AgentLoop::tool_round(Thread& t, std::string reply, std::vector<ToolCall> calls, double now) {
  Conversation& c = t.conversation;
  Message results{Role::user, {}, {}, {}};
  double run_time = 0.0;
  for (const ToolCall& call : calls) {
    t.tokens += kCallTokens;
    if (call.name == "Agent") {
      results.results.push_back({call.id, "Async agent launched successfully. It runs in the background."});
      continue;
    }
    // The client cuts a tool's output that would not fit the window (the thread compacts before its next
    // request, but that request must still fit): a result gets at most what is left, shared by the calls.
    const std::size_t room = results_room(t, calls.size() - results.results.size());
    const auto tokens = std::min(room, static_cast<std::size_t>(std::lround(
                                           draw_lognormal(t.rng, static_cast<double>(config_.result_tokens),
                                                          static_cast<double>(config_.result_tokens_max)))));
    results.results.push_back({call.id, text(kResultTag, t, t.results++, std::max<std::size_t>(tokens, 1))});
    t.tokens += tokens;
    // Parallel calls run at once: the round waits for the slowest.
    run_time = std::max(run_time, draw_lognormal(t.rng, config_.tool_time, config_.tool_time_max));
  }
  c.messages.push_back(Message{Role::assistant, std::move(reply), std::move(calls), {}});
  c.messages.push_back(std::move(results));
  --t.rounds_left;
  t.ready_at = now + run_time;
}

void AgentLoop::start_subagent(std::size_t agent, std::size_t type, double now) {
  Agent& a = agents_[agent];
  for (std::size_t k = 1; k < width_; ++k) {
    Thread& t = threads_[agent * width_ + k];
    if (t.active || t.in_flight) {
      continue;
    }
    t = Thread{};
    Conversation& c = t.conversation;
    c.session_index = a.session_index;
    c.session_id = main_of(agent).conversation.session_id;
    c.interactive = main_of(agent).conversation.interactive;
    c.agent_id = agent_id(workload_.config().seed, a.session_index, a.serial);
    c.prefix = Prefix::subagent;
    c.subagent_type = type;
    t.rng = base::SplitMix64(stream_seed(workload_.config().seed, kThreadTag, a.session_index, a.serial + 1));
    t.tokens = prefix_tokens(c) + config_.task_tokens;
    c.messages.push_back(user_text(text(kInstructionTag, t, 0, config_.task_tokens)));
    t.rounds_left = draw_count(t.rng, config_.subagent_rounds_mean, config_.rounds_max) - 1;
    t.active = true;
    t.ready_at = now;
    ++a.serial;
    ++a.running;
    ++counts_.subagents_started;
    return;
  }
}

// Finished subagents' reports reach the main thread in its next user message (the one waiting to be sent).
void AgentLoop::deliver_reports(std::size_t agent) {
  Agent& a = agents_[agent];
  Thread& m = main_of(agent);
  if (a.reports.empty() || m.conversation.messages.empty() || m.in_flight) {
    return;
  }
  Message& next = m.conversation.messages.back();
  for (std::string& report : a.reports) {
    next.text += next.text.empty() ? "" : "\n";
    next.text += report;
    m.tokens += config_.report_tokens;
  }
  a.reports.clear();
}

void AgentLoop::complete_main(std::size_t agent, std::string reply, double now, TurnEnd& end) {
  Agent& a = agents_[agent];
  Thread& m = main_of(agent);
  if (m.compacting) {
    compact(m);
    m.ready_at = now;
    return;
  }
  m.tokens += engine::count_tokens(reply);
  if (m.rounds_left > 0) {
    std::vector<ToolCall> calls;
    std::vector<std::size_t> types;
    if (m.rounds_left == a.subagent_round) {
      // One or two Agent calls in one reply, as far as slots are free.
      const std::size_t starting = std::min<std::size_t>(unit(m.rng) < 0.3 ? 2 : 1, width_ - 1 - a.running);
      for (std::size_t i = 0; i < starting; ++i) {
        types.push_back(m.rng.below(config_.subagent_types));
        calls.push_back(draw_tool_call(m.rng, true, types.back()));
      }
    }
    if (calls.empty()) {
      calls = draw_calls(m);
    }
    tool_round(m, std::move(reply), std::move(calls), now);
    for (const std::size_t type : types) {
      start_subagent(agent, type, now);
    }
    deliver_reports(agent);
    if (m.rounds_left == 0 && a.running > 0) {
      a.waiting = true;  // the final reply needs the subagents' reports
      m.ready_at = kNever;
    }
    return;
  }
  end.task_finished = true;
  end.final_text = true;
  end.task_started_at = a.task_started.value_or(now);
  a.task_started.reset();
  ++counts_.tasks_finished;
  m.conversation.messages.push_back(Message{Role::assistant, std::move(reply), {}, {}});
  ++a.task;
  // The user reads the reply, uniform in [0.5, 1.5) x think: a person at the keyboard the longer.
  const double think =
      (interactive(agent) ? config_.interactive_think_time : config_.think_time) * (0.5 + unit(m.rng));
  if (a.task < config_.tasks) {
    start_task(agent, now + think);
    return;
  }
  end.session_finished = true;
  ++counts_.sessions_finished;
  m.active = false;
  if (!stopped_) {
    start_session(agent, now + think);
  }
}

void AgentLoop::complete_subagent(std::size_t slot, std::string reply, double now, TurnEnd& end) {
  Thread& t = threads_[slot];
  const std::size_t agent = slot / width_;
  t.tokens += engine::count_tokens(reply);
  if (t.rounds_left > 0) {
    tool_round(t, std::move(reply), draw_calls(t), now);
    return;
  }
  Agent& a = agents_[agent];
  a.reports.push_back(text(kReportTag, t, 0, config_.report_tokens));
  end.final_text = true;
  t.active = false;
  t.conversation.messages.clear();
  --a.running;
  deliver_reports(agent);
  if (a.waiting && a.running == 0) {
    a.waiting = false;
    main_of(agent).ready_at = now;
  }
}

std::optional<TurnEnd> AgentLoop::land(std::size_t slot) {
  Thread& t = threads_.at(slot);
  if (!t.in_flight) {
    // A driver bug, not an input error: ending a request that was never handed out.
    throw std::logic_error("AgentLoop: slot has no request in flight");
  }
  t.in_flight = false;
  --in_flight_;
  TurnEnd end;
  end.session_index = t.conversation.session_index;
  end.turn = t.conversation.turn;
  if (!t.orphan) {
    return end;
  }
  // Its session was abandoned: the request ends nothing, and a new session may start now.
  t.orphan = false;
  t.active = false;
  maybe_restart(slot / width_);
  return std::nullopt;
}

TurnEnd AgentLoop::complete(std::size_t slot, double now, std::string reply) {
  std::optional<TurnEnd> end = land(slot);
  if (!end) {
    return TurnEnd{};
  }
  Thread& t = threads_[slot];
  ++t.conversation.turn;
  if (slot % width_ == 0) {
    complete_main(slot / width_, std::move(reply), now, *end);
  } else {
    complete_subagent(slot, std::move(reply), now, *end);
  }
  if (!stopped_ && t.active && t.ready_at < kNever) {
    end->next_ready_at = t.ready_at;
  }
  return *end;
}

void AgentLoop::abandon(std::size_t agent, double restart_at) {
  for (std::size_t k = 0; k < width_; ++k) {
    Thread& t = threads_[agent * width_ + k];
    if (t.in_flight) {
      t.orphan = true;
    } else {
      t.active = false;
    }
  }
  agents_[agent].restart_at = restart_at;
  maybe_restart(agent);
}

void AgentLoop::maybe_restart(std::size_t agent) {
  Agent& a = agents_[agent];
  if (!a.restart_at || stopped_) {
    return;
  }
  for (std::size_t k = 0; k < width_; ++k) {
    if (threads_[agent * width_ + k].in_flight) {
      return;
    }
  }
  start_session(agent, *a.restart_at);
}

TurnEnd AgentLoop::fail(std::size_t slot, double now, double retry_delay) {
  std::optional<TurnEnd> end = land(slot);
  if (!end) {
    return TurnEnd{};
  }
  const std::size_t agent = slot / width_;
  abandon(agent, now + std::max(config_.think_time, retry_delay));
  if (const Thread& m = main_of(agent); !stopped_ && m.active) {
    end->next_ready_at = m.ready_at;
  }
  return *end;
}

}  // namespace warden::workload
