// The agent-session workloads as data: preset `claude-code` (what the reference load tool sent: chat turns)
// and preset `agentic` (coding agents: tool rounds, background subagents, compaction, tasks; agent_loop.hpp).
// Pure: no clocks, no I/O. Used by `bench` (real HTTP) and `simulate` (virtual time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "workload/conversation.hpp"

namespace warden::workload {

// What only the agentic workload has (docs/bench.md says where each default comes from). Counts drawn
// per task or round are drawn deterministically from the workload's seed.
struct AgenticConfig {
  bool enabled = false;
  std::size_t tools = 14;            // tool definitions the main thread offers
  std::size_t tools_tokens = 10500;  // ... their size together (the main prefix = system + tools)
  std::size_t subagent_types = 2;    // kinds of subagent, each with its own shared system prompt + tools
  std::size_t subagent_system_tokens = 700;
  std::size_t subagent_tools = 10;
  std::size_t subagent_tools_tokens = 6000;
  std::size_t task_tokens = 300;  // user prompt that starts a later task (the first is first_tokens)
  std::size_t tasks = 4;          // tasks per session; then a new session (new session id)
  double rounds_mean = 8.0;       // tool rounds per task: geometric with this mean, 1..rounds_max
  std::size_t rounds_max = 30;
  double parallel_share = 0.2;  // share of rounds with several tool calls (2..parallel_max)
  std::size_t parallel_max = 4;
  double subagent_share = 0.3;        // share of tasks whose main thread starts subagents (1 or 2)
  std::size_t max_subagents = 2;      // subagents of one session running at once
  double subagent_rounds_mean = 4.0;  // a subagent's tool rounds: geometric with this mean
  std::size_t result_tokens = 400;    // one tool result: log-normal with this median, sigma 1
  std::size_t result_tokens_max = 4000;
  std::size_t report_tokens = 300;  // a finished subagent's report, added to the main thread
  double tool_time = 0.5;           // seconds a tool runs: log-normal with this median, sigma 1
  double tool_time_max = 30.0;
  double think_time = 20.0;            // seconds between a task's reply and the next task: uniform x0.5-1.5
  std::size_t context_window = 32768;  // tokens; a thread compacts past compact_at of it
  double compact_at = 0.8;
  std::size_t summary_tokens = 2000;  // the summary that replaces a compacted history
  // Distinct session ids the fleet sends (docs/simulator.md, "Agents that share session ids"): 0 = every
  // session its own (default); K > 0 = agent a's sessions all send key a mod K, as agents do that continue
  // one conversation of a shared working directory (`claude -c`) or run as subagents of K sessions.
  std::size_t session_keys = 0;
  // With session_keys: each agent's main thread also names itself with its own X-Claude-Code-Agent-Id,
  // as a subagent of the shared session does (a new id for each of its sessions).
  bool agent_threads = false;
  // Interactive sessions beside the headless agents: a loop of N agents holds N headless ones and these
  // (the last agents of the loop), each a person at the keyboard who reads interactive_think_time seconds
  // between tasks (uniform x0.5-1.5) instead of think_time. Their tasks are the agents' own.
  std::size_t interactive = 0;
  double interactive_think_time = 60.0;
};

// Every size of the workload. Token sizes are measured with the engine's tokenizer (engine/tokenizer.hpp),
// the one the simulator and the what-if driver count with.
struct WorkloadConfig {
  std::size_t system_tokens = 3500;  // system prompt shared by every session
  std::size_t first_tokens = 7300;   // first user message, unique per session (reference measured 7.2-7.5k)
  std::size_t turn_tokens = 400;     // new user text added by each follow-up turn
  std::size_t turns = 6;             // user turns per session, the first included (1 + five follow-ups)
  std::size_t max_output = 256;      // max_tokens of every request
  double think_time = 0.0;           // model seconds between a turn's end and the session's next turn
  std::uint64_t seed = 1;            // fixes every byte of text and every session id
  // 0 = sizes counted exactly with the engine tokenizer; > 0 = sizes in characters (tokens x this).
  double chars_per_token = 0.0;
  // Model seconds over which a level's N first turns are spread (slot i starts at i/N of it); 0 = all at
  // once, as the reference load tool did, which makes the sessions advance in lockstep waves.
  double stagger = 0.0;
  // Claude Code's per-conversation billing line as the first system block (billing_line()); it defeats
  // prefix sharing between conversations unless the gateway removes it.
  bool billing_header = false;
  AgenticConfig agentic{};
};

// Expected failures carry a readable reason.
using base::Result;

// Named presets: `claude-code` (the reference workload) and `agentic`.
Result<WorkloadConfig> preset(std::string_view name);

// Checks sizes and counts; says why when the configuration cannot run.
Result<void> validate(const WorkloadConfig& config);

class Workload {
 public:
  explicit Workload(WorkloadConfig config);

  const WorkloadConfig& config() const { return config_; }
  const std::string& system_prompt() const { return system_prompt_; }
  bool agentic() const { return config_.agentic.enabled; }
  // The system prompt and tool definitions (a JSON array; empty without tools) a conversation starts with.
  const std::string& system_prompt(const Conversation& conversation) const;
  const std::string& tools_json(const Conversation& conversation) const;
  // Characters of a conversation's prompt text (system, tools, messages): the gateway's size estimate.
  std::size_t prompt_chars(const Conversation& conversation) const;
  // 64 hex digits, like Claude Code's device id; one device for the whole run.
  const std::string& device_id() const { return device_id_; }

  // A new conversation holding its first user message.
  Conversation start_session(std::uint64_t session_index) const;
  // Appends the engine's reply, as an agent does with the assistant turn it received.
  void add_reply(Conversation& conversation, std::string reply) const;
  // Appends the next user turn; false (and no change) when the session has had all its turns.
  bool next_turn(Conversation& conversation) const;
  bool is_last_turn(const Conversation& conversation) const { return conversation.turn + 1 >= config_.turns; }

  // Deterministic stand-in for an engine's reply of exactly `tokens` engine tokens, built from the
  // engine's output vocabulary (so it re-tokenizes to itself), for drivers without a real engine.
  std::string synthetic_reply(const Conversation& conversation, std::size_t tokens) const;

  // Text of `tokens` target tokens (as the workload counts them) from a stream seed.
  std::string text(std::uint64_t stream, std::size_t tokens) const;

 private:
  WorkloadConfig config_;
  std::string system_prompt_;
  std::string device_id_;
  std::string tools_json_;                        // main thread's tools (agentic)
  std::vector<std::string> subagent_prompts_;     // per subagent type
  std::vector<std::string> subagent_tools_json_;  // per subagent type
};

// The first system block Claude Code 2.1.332 sends: "x-anthropic-billing-header: cc_version=2.1.332.XXX;
// cc_entrypoint=sdk-cli;", XXX three hex digits fixed by (seed, session index): stable within a
// conversation, different between most conversations, like the real client's.
std::string billing_line(std::uint64_t seed, std::uint64_t session_index);
// A subagent's billing line: its suffix differs from its parent's, as the real client's does. `interactive`:
// the entrypoint of the interactive `claude` (`cli`) instead of `claude -p`'s (`sdk-cli`).
std::string billing_line(std::uint64_t seed, std::uint64_t session_index, std::string_view agent_id,
                         bool interactive = false);

// The first request of an agent task (core::RequestFacts::task_start): the main thread, and no tool result
// in the user messages since its last assistant turn (a compaction request at a task's start is one too).
bool is_task_start(const Conversation& conv);

// `agents` agents split between tenants in the proportions of `shares` (largest remainder), each tenant's
// agents spread over the agents' order (agent a -> tenant index).
std::vector<std::size_t> split_between_tenants(std::size_t agents, const std::vector<std::uint32_t>& shares);

// uuid-like session id (8-4-4-4-12 lowercase hex, version 4 / variant bits set), fixed by seed and index.
std::string session_id(std::uint64_t seed, std::uint64_t session_index);

// An HTTP request as the bench sends it; the renderers are pure so the what-if driver can inspect the same
// bodies the gateway would see.
struct HttpRequestSpec {
  std::string method = "POST";
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// What Claude Code sends: POST /v1/messages?beta=true, X-Claude-Code-Session-Id, metadata.user_id as a
// JSON string {"device_id","account_uuid","session_id"}, system as text blocks, stream true, max_tokens;
// agentic conversations add `tools`, tool_use / tool_result blocks and, for a subagent, its
// X-Claude-Code-Agent-Id.
HttpRequestSpec render_anthropic(const Workload& workload, const Conversation& conversation,
                                 std::string_view model);

// OpenAI chat completions, streaming with usage, prompt_cache_key = session id; tool calls as
// `tool_calls` and `tool` messages.
HttpRequestSpec render_openai(const Workload& workload, const Conversation& conversation,
                              std::string_view model);

// {"messages":[...]} holding `messages` as render_anthropic writes them (the prompt renderer tokenizes
// tool blocks through it).
std::string anthropic_messages_body(const std::vector<Message>& messages);

}  // namespace warden::workload
