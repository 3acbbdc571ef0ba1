// The agent-session workload (preset `claude-code`): what the reference load tool sent, as data.
// Pure: no clocks, no I/O. Used by `bench` (real HTTP) and `simulate` (virtual time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace warden::workload {

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
};

// Expected failures carry a readable reason.
using base::Result;

// Named presets; only `claude-code` (the reference workload) exists today.
Result<WorkloadConfig> preset(std::string_view name);

// Checks sizes and counts; says why when the configuration cannot run.
Result<void> validate(const WorkloadConfig& config);

enum class Role { user, assistant };

struct Message {
  Role role;
  std::string text;
};

// One agent conversation: the system prompt is shared and lives in the Workload.
struct Conversation {
  std::uint64_t session_index = 0;  // 0, 1, 2, ... in the order sessions were started
  std::string session_id;           // uuid-like, fixed by (seed, session_index)
  std::size_t turn = 0;             // index of the last user turn in `messages` (0 = first message)
  std::vector<Message> messages;    // user, assistant, user, ... ; ends with a user message when ready
};

class Workload {
 public:
  explicit Workload(WorkloadConfig config);

  const WorkloadConfig& config() const { return config_; }
  const std::string& system_prompt() const { return system_prompt_; }
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

 private:
  // Text of `tokens` target tokens from a stream seed.
  std::string text(std::uint64_t stream, std::size_t tokens) const;

  WorkloadConfig config_;
  std::string system_prompt_;
  std::string device_id_;
};

// The first system block Claude Code 2.1.332 sends: "x-anthropic-billing-header: cc_version=2.1.332.XXX;
// cc_entrypoint=sdk-cli;", XXX three hex digits fixed by (seed, session index): stable within a
// conversation, different between most conversations, like the real client's.
std::string billing_line(std::uint64_t seed, std::uint64_t session_index);

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
// JSON string {"device_id","account_uuid","session_id"}, system as text blocks, stream true, max_tokens.
HttpRequestSpec render_anthropic(const Workload& workload, const Conversation& conversation,
                                 std::string_view model);

// OpenAI chat completions, streaming with usage, prompt_cache_key = session id.
HttpRequestSpec render_openai(const Workload& workload, const Conversation& conversation,
                              std::string_view model);

}  // namespace warden::workload
