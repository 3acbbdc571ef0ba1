#include "workload/workload.hpp"

#include <fmt/core.h>

#include <boost/json.hpp>

#include <cmath>

#include "engine/tokenizer.hpp"
#include "workload/text.hpp"

namespace warden::workload {

namespace {

// Labels of the text streams, so no two kinds of text ever share a random stream.
enum StreamTag : std::uint64_t {
  kSystemTag = 1,
  kFirstTag = 2,
  kTurnTag = 3,
  kReplyTag = 4,
  kSessionIdTag = 5,
  kDeviceTag = 6,
  kBillingTag = 7,
};

std::string hex64(std::uint64_t v) {
  return fmt::format("{:016x}", v);
}

boost::json::object text_block(const std::string& text) {
  boost::json::object block;
  block["type"] = "text";
  block["text"] = text;
  return block;
}

boost::json::array text_blocks(const std::string& text) {
  boost::json::array blocks;
  blocks.emplace_back(text_block(text));
  return blocks;
}

const char* role_name(Role role) {
  return role == Role::user ? "user" : "assistant";
}

}  // namespace

Result<WorkloadConfig> preset(std::string_view name) {
  if (name == "claude-code") {
    return WorkloadConfig{};
  }
  return std::string(fmt::format("unknown workload preset '{}' (known: claude-code)", name));
}

Result<void> validate(const WorkloadConfig& config) {
  if (config.turns < 1) {
    return std::string("turns must be at least 1");
  }
  if (config.first_tokens < 1 || config.turn_tokens < 1) {
    return std::string("first-tokens and turn-tokens must be at least 1");
  }
  if (config.max_output < 1) {
    return std::string("max-output must be at least 1");
  }
  if (!(config.think_time >= 0.0) || !std::isfinite(config.think_time)) {
    return std::string("think-time must be a finite number of seconds >= 0");
  }
  if (!(config.stagger >= 0.0) || !std::isfinite(config.stagger)) {
    return std::string("stagger must be a finite number of seconds >= 0");
  }
  if (!(config.chars_per_token >= 0.0) || !std::isfinite(config.chars_per_token)) {
    return std::string("chars per token must be >= 0 (0 = measure)");
  }
  // Keeps one conversation's history within what a client would plausibly send (and memory bounded).
  const double history =
      static_cast<double>(config.system_tokens) + static_cast<double>(config.first_tokens) +
      static_cast<double>(config.turns) * static_cast<double>(config.turn_tokens + config.max_output);
  if (history > 4.0e6) {
    return std::string("workload too large: a session would exceed 4M tokens");
  }
  return {};
}

std::string session_id(std::uint64_t seed, std::uint64_t session_index) {
  SplitMix64 rng(stream_seed(seed, kSessionIdTag, session_index));
  std::uint64_t hi = rng.next();
  std::uint64_t lo = rng.next();
  hi = (hi & ~0xF000ULL) | 0x4000ULL;                         // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // RFC 4122 variant
  const std::string h = hex64(hi);
  const std::string l = hex64(lo);
  return fmt::format("{}-{}-{}-{}-{}", h.substr(0, 8), h.substr(8, 4), h.substr(12, 4), l.substr(0, 4),
                     l.substr(4, 12));
}

std::string billing_line(std::uint64_t seed, std::uint64_t session_index) {
  SplitMix64 rng(stream_seed(seed, kBillingTag, session_index));
  return fmt::format("x-anthropic-billing-header: cc_version=2.1.332.{:03x}; cc_entrypoint=sdk-cli;",
                     rng.below(0x1000));
}

Workload::Workload(WorkloadConfig config) : config_(config) {
  system_prompt_ = text(stream_seed(config_.seed, kSystemTag), config_.system_tokens);
  SplitMix64 rng(stream_seed(config_.seed, kDeviceTag));
  for (int i = 0; i < 4; ++i) {
    device_id_ += hex64(rng.next());
  }
}

std::string Workload::text(std::uint64_t stream, std::size_t tokens) const {
  if (config_.chars_per_token > 0.0) {
    const auto chars =
        static_cast<std::size_t>(std::llround(static_cast<double>(tokens) * config_.chars_per_token));
    return make_text(stream, chars);
  }
  return make_text(stream, tokens, engine::count_tokens);
}

Conversation Workload::start_session(std::uint64_t session_index) const {
  Conversation c;
  c.session_index = session_index;
  c.session_id = session_id(config_.seed, session_index);
  c.turn = 0;
  c.messages.push_back(
      {Role::user, text(stream_seed(config_.seed, kFirstTag, session_index), config_.first_tokens)});
  return c;
}

void Workload::add_reply(Conversation& conversation, std::string reply) const {
  conversation.messages.push_back({Role::assistant, std::move(reply)});
}

bool Workload::next_turn(Conversation& conversation) const {
  if (is_last_turn(conversation)) {
    return false;
  }
  ++conversation.turn;
  conversation.messages.push_back(
      {Role::user, text(stream_seed(config_.seed, kTurnTag, conversation.session_index, conversation.turn),
                        config_.turn_tokens)});
  return true;
}

std::string Workload::synthetic_reply(const Conversation& conversation, std::size_t tokens) const {
  SplitMix64 rng(stream_seed(config_.seed, kReplyTag, conversation.session_index, conversation.turn));
  engine::Tokens ids;
  ids.reserve(tokens);
  for (std::size_t i = 0; i < tokens; ++i) {
    ids.push_back(engine::output_token(rng.next(), i));
  }
  return engine::detokenize(ids);
}

HttpRequestSpec render_anthropic(const Workload& workload, const Conversation& conversation,
                                 std::string_view model) {
  boost::json::object user_id;
  user_id["device_id"] = workload.device_id();
  user_id["account_uuid"] = "";
  user_id["session_id"] = conversation.session_id;

  boost::json::array messages;
  for (const Message& m : conversation.messages) {
    boost::json::object msg;
    msg["role"] = role_name(m.role);
    msg["content"] = text_blocks(m.text);
    messages.emplace_back(std::move(msg));
  }

  boost::json::object body;
  body["model"] = model;
  body["max_tokens"] = workload.config().max_output;
  body["stream"] = true;
  boost::json::array system;
  if (workload.config().billing_header) {
    system.emplace_back(text_block(billing_line(workload.config().seed, conversation.session_index)));
  }
  if (!workload.system_prompt().empty()) {
    system.emplace_back(text_block(workload.system_prompt()));
  }
  if (!system.empty()) {
    body["system"] = std::move(system);
  }
  body["messages"] = std::move(messages);
  boost::json::object metadata;
  // Claude Code (>= 2.1.78) sends user_id as a JSON document serialized into a string.
  metadata["user_id"] = boost::json::serialize(user_id);
  body["metadata"] = std::move(metadata);

  HttpRequestSpec spec;
  spec.target = "/v1/messages?beta=true";
  spec.headers = {
      {"content-type", "application/json"},
      {"accept", "text/event-stream"},
      {"anthropic-version", "2023-06-01"},
      {"x-api-key", "sk-warden-bench"},
      {"x-app", "cli"},
      {"X-Claude-Code-Session-Id", conversation.session_id},
  };
  spec.body = boost::json::serialize(body);
  return spec;
}

HttpRequestSpec render_openai(const Workload& workload, const Conversation& conversation,
                              std::string_view model) {
  boost::json::array messages;
  if (!workload.system_prompt().empty()) {
    boost::json::object sys;
    sys["role"] = "system";
    sys["content"] = workload.system_prompt();
    messages.emplace_back(std::move(sys));
  }
  for (const Message& m : conversation.messages) {
    boost::json::object msg;
    msg["role"] = role_name(m.role);
    msg["content"] = m.text;
    messages.emplace_back(std::move(msg));
  }
  boost::json::object body;
  body["model"] = model;
  body["messages"] = std::move(messages);
  body["max_tokens"] = workload.config().max_output;
  body["stream"] = true;
  boost::json::object stream_options;
  stream_options["include_usage"] = true;
  body["stream_options"] = std::move(stream_options);
  body["prompt_cache_key"] = conversation.session_id;

  HttpRequestSpec spec;
  spec.target = "/v1/chat/completions";
  spec.headers = {
      {"content-type", "application/json"},
      {"accept", "text/event-stream"},
      {"authorization", "Bearer sk-warden-bench"},
  };
  spec.body = boost::json::serialize(body);
  return spec;
}

}  // namespace warden::workload
