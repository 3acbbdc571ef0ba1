#include "whatif/prompt.hpp"

#include "engine/chat_template.hpp"

namespace warden::whatif {

engine::Result<engine::Tokens> render_full(const workload::Workload& workload,
                                           const workload::Conversation& conversation) {
  const workload::HttpRequestSpec spec = workload::render_anthropic(workload, conversation, "model");
  return engine::render_prompt(engine::ApiKind::anthropic_messages, spec.body);
}

namespace {

// One message as the template renders it: plain text directly, tool blocks through the Anthropic renderer
// (each message renders on its own, so a body of that message alone gives its tokens).
engine::Result<engine::Tokens> message_tokens(const workload::Message& m) {
  if (m.calls.empty() && m.results.empty()) {
    return engine::render_message(m.role == workload::Role::user ? "user" : "assistant", m.text);
  }
  auto tokens =
      engine::render_prompt(engine::ApiKind::anthropic_messages, workload::anthropic_messages_body({m}));
  if (tokens) {
    tokens->resize(tokens->size() - engine::generation_prompt().size());
  }
  return tokens;
}

}  // namespace

engine::Result<engine::Tokens> IncrementalPrompt::render(const workload::Workload& workload,
                                                         const workload::Conversation& conversation) {
  const engine::Tokens tail = engine::generation_prompt();
  const bool same_session = valid_ && session_index_ == conversation.session_index &&
                            agent_id_ == conversation.agent_id && compactions_ == conversation.compactions &&
                            messages_ <= conversation.messages.size() && messages_ > 0;
  if (!same_session) {
    auto full = render_full(workload, conversation);
    if (!full) {
      valid_ = false;
      return full;
    }
    history_ = std::move(*full);
    history_.resize(history_.size() - tail.size());  // keep the history, drop the generation prompt
    valid_ = true;
    session_index_ = conversation.session_index;
    agent_id_ = conversation.agent_id;
    compactions_ = conversation.compactions;
    messages_ = conversation.messages.size();
  } else {
    for (; messages_ < conversation.messages.size(); ++messages_) {
      const workload::Message& m = conversation.messages[messages_];
      auto block = message_tokens(m);
      if (!block) {
        valid_ = false;
        return block;
      }
      history_.insert(history_.end(), block->begin(), block->end());
    }
  }
  engine::Tokens prompt;
  prompt.reserve(history_.size() + tail.size());
  prompt = history_;
  prompt.insert(prompt.end(), tail.begin(), tail.end());
  return prompt;
}

}  // namespace warden::whatif
