// The prompt tokens the engine sees for a workload conversation, as the sim server would render them
// (engine chat template over the Anthropic body that `bench` sends), computed incrementally.
//
// The template renders each message on its own (chat_template.hpp), so turn N+1's prompt is turn N's
// history followed by the new messages. A thread's first turn (and its first after a compaction) is
// rendered through the full path (request body -> render_prompt, exactly what the sim server does); later
// turns only tokenize the new messages.
// Re-tokenizing ~12k tokens of history every turn would dominate the what-if run time otherwise.
#pragma once

#include <cstdint>
#include <string>

#include "engine/result.hpp"
#include "engine/tokenizer.hpp"
#include "workload/workload.hpp"

namespace warden::whatif {

class IncrementalPrompt {
 public:
  // The prompt of `conversation`'s current turn: the cached history + new messages + generation prompt.
  // Errors only if the full render refuses the body (a workload bug).
  engine::Result<engine::Tokens> render(const workload::Workload& workload,
                                        const workload::Conversation& conversation);

  // Tokens cached for the current session (history without the generation prompt).
  std::size_t cached_tokens() const { return history_.size(); }

 private:
  bool valid_ = false;
  std::uint64_t session_index_ = 0;
  std::string agent_id_;         // which thread of the session
  std::size_t compactions_ = 0;  // a compaction replaces the history
  std::size_t messages_ = 0;     // messages of the conversation already in history_
  engine::Tokens history_;
};

// The full path alone: Anthropic body as bench renders it, then the engine's template (tests, checks).
engine::Result<engine::Tokens> render_full(const workload::Workload& workload,
                                           const workload::Conversation& conversation);

}  // namespace warden::whatif
