#include "workload/workload.hpp"

#include <fmt/core.h>

#include <boost/json.hpp>

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "engine/tokenizer.hpp"
#include "workload/text.hpp"
#include "workload/tools.hpp"

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
  kToolsTag = 8,
  kSubagentSystemTag = 9,
  kSubagentToolsTag = 10,
  kSubagentBillingTag = 11,
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

// A message's content blocks: results, text, calls; a plain text message is one text block, as ever.
boost::json::array content_blocks(const Message& m) {
  if (m.calls.empty() && m.results.empty()) {
    return text_blocks(m.text);
  }
  boost::json::array blocks;
  for (const ToolResult& r : m.results) {
    boost::json::object block;
    block["type"] = "tool_result";
    block["tool_use_id"] = r.id;
    block["content"] = r.content;
    blocks.emplace_back(std::move(block));
  }
  if (!m.text.empty()) {
    blocks.emplace_back(text_block(m.text));
  }
  for (const ToolCall& c : m.calls) {
    boost::json::object block;
    block["type"] = "tool_use";
    block["id"] = c.id;
    block["name"] = c.name;
    block["input"] = boost::json::parse(c.input_json);
    blocks.emplace_back(std::move(block));
  }
  return blocks;
}

boost::json::array anthropic_messages(const std::vector<Message>& messages) {
  boost::json::array out;
  for (const Message& m : messages) {
    boost::json::object msg;
    msg["role"] = role_name(m.role);
    msg["content"] = content_blocks(m);
    out.emplace_back(std::move(msg));
  }
  return out;
}

// Anthropic tool definitions as OpenAI function tools.
boost::json::array openai_tools(const std::string& tools_json) {
  boost::json::array out;
  const boost::json::value tools = boost::json::parse(tools_json);  // outlives the loop over it
  for (const auto& t : tools.as_array()) {
    boost::json::object function;
    function["name"] = t.at("name");
    function["description"] = t.at("description");
    function["parameters"] = t.at("input_schema");
    boost::json::object tool;
    tool["type"] = "function";
    tool["function"] = std::move(function);
    out.emplace_back(std::move(tool));
  }
  return out;
}

// OpenAI chat messages of one workload message: tool results as `tool` messages, calls as tool_calls.
void add_openai_messages(boost::json::array& out, const Message& m) {
  for (const ToolResult& r : m.results) {
    boost::json::object msg;
    msg["role"] = "tool";
    msg["tool_call_id"] = r.id;
    msg["content"] = r.content;
    out.emplace_back(std::move(msg));
  }
  if (!m.results.empty() && m.text.empty()) {
    return;
  }
  boost::json::object msg;
  msg["role"] = role_name(m.role);
  msg["content"] = m.text;
  if (!m.calls.empty()) {
    boost::json::array calls;
    for (const ToolCall& c : m.calls) {
      boost::json::object function;
      function["name"] = c.name;
      function["arguments"] = c.input_json;
      boost::json::object call;
      call["id"] = c.id;
      call["type"] = "function";
      call["function"] = std::move(function);
      calls.emplace_back(std::move(call));
    }
    msg["tool_calls"] = std::move(calls);
  }
  out.emplace_back(std::move(msg));
}

}  // namespace

Result<WorkloadConfig> preset(std::string_view name) {
  if (name == "claude-code") {
    return WorkloadConfig{};
  }
  if (name == "agentic") {
    // Claude Code 2.1.332's main thread: ~5.5k characters of system prompt and 14 tools (~36k characters
    // of JSON), ~12k tokens together; the first message of a session carries the project's context.
    WorkloadConfig c;
    c.system_tokens = 1400;
    c.first_tokens = 1200;
    c.agentic.enabled = true;
    return c;
  }
  return std::string(fmt::format("unknown workload preset '{}' (known: claude-code, agentic)", name));
}

namespace {

Result<void> validate_agentic(const AgenticConfig& a, std::size_t prefix_tokens) {
  if (a.tools < 1 || a.subagent_tools < 1 || a.subagent_types < 1) {
    return std::string("agentic: tools, subagent tools and subagent types must be at least 1");
  }
  if (a.tasks < 1 || a.rounds_max < 1 || a.parallel_max < 2 || a.max_subagents > 8) {
    return std::string("agentic: tasks, rounds max >= 1, parallel max >= 2, max subagents <= 8");
  }
  const auto share = [](double v) { return v >= 0.0 && v <= 1.0; };
  if (!share(a.parallel_share) || !share(a.subagent_share) || !(a.compact_at > 0.0 && a.compact_at <= 1.0)) {
    return std::string("agentic: shares must be within [0, 1], compact-at within (0, 1]");
  }
  const auto seconds = [](double v) { return v >= 0.0 && std::isfinite(v); };
  if (!(a.rounds_mean >= 1.0) || !(a.subagent_rounds_mean >= 1.0) || !seconds(a.tool_time) ||
      !seconds(a.tool_time_max) || !seconds(a.think_time) || !seconds(a.interactive_think_time) ||
      a.rounds_mean > 1000 || a.subagent_rounds_mean > 1000) {
    return std::string("agentic: round means within [1, 1000], times finite and >= 0");
  }
  if (a.result_tokens < 1 || a.result_tokens_max < a.result_tokens || a.task_tokens < 1 ||
      a.summary_tokens < 1 || a.report_tokens < 1) {
    return std::string("agentic: token sizes must be at least 1 (result max >= result median)");
  }
  if (a.interactive > 10000) {
    return std::string("agentic: at most 10000 interactive sessions");
  }
  if (a.agent_threads && a.session_keys == 0) {
    return std::string("agentic: agent threads need shared session keys (session keys > 0)");
  }
  // After a compaction the thread must fit with room for a round, or it would compact forever.
  if (static_cast<double>(prefix_tokens + a.summary_tokens + a.result_tokens_max) >=
      a.compact_at * static_cast<double>(a.context_window)) {
    return std::string("agentic: the context window is too small for the prefix, a summary and a round");
  }
  return {};
}

}  // namespace

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
  if (config.agentic.enabled) {
    return validate_agentic(config.agentic, config.system_tokens + config.agentic.tools_tokens);
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

std::string billing_line(std::uint64_t seed, std::uint64_t session_index, std::string_view agent_id,
                         bool interactive) {
  std::string line = agent_id.empty() ? billing_line(seed, session_index) : std::string();
  if (!agent_id.empty()) {
    SplitMix64 rng(
        stream_seed(seed, kSubagentBillingTag, session_index, XXH3_64bits(agent_id.data(), agent_id.size())));
    line = fmt::format("x-anthropic-billing-header: cc_version=2.1.332.{:03x}; cc_entrypoint=sdk-cli;",
                       rng.below(0x1000));
  }
  if (interactive) {
    constexpr std::string_view headless = "cc_entrypoint=sdk-cli;";
    line.replace(line.find(headless), headless.size(), "cc_entrypoint=cli;");
  }
  return line;
}

bool is_task_start(const Conversation& conv) {
  if (!conv.agent_id.empty()) {
    return false;
  }
  for (auto it = conv.messages.rbegin(); it != conv.messages.rend() && it->role == Role::user; ++it) {
    if (!it->results.empty()) {
      return false;
    }
  }
  return !conv.messages.empty();
}

Workload::Workload(WorkloadConfig config) : config_(config) {
  system_prompt_ = text(stream_seed(config_.seed, kSystemTag), config_.system_tokens);
  SplitMix64 rng(stream_seed(config_.seed, kDeviceTag));
  for (int i = 0; i < 4; ++i) {
    device_id_ += hex64(rng.next());
  }
  if (!agentic()) {
    return;
  }
  // Every session's threads of one kind start with the same bytes: those prefixes are shared.
  const AgenticConfig& a = config_.agentic;
  const TextSource source = [this](std::uint64_t stream, std::size_t tokens) { return text(stream, tokens); };
  tools_json_ = tool_definitions(main_tool_names(), a.tools, a.tools_tokens,
                                 stream_seed(config_.seed, kToolsTag), source);
  for (std::size_t t = 0; t < a.subagent_types; ++t) {
    subagent_prompts_.push_back(
        text(stream_seed(config_.seed, kSubagentSystemTag, t), a.subagent_system_tokens));
    subagent_tools_json_.push_back(tool_definitions(subagent_tool_names(), a.subagent_tools,
                                                    a.subagent_tools_tokens,
                                                    stream_seed(config_.seed, kSubagentToolsTag, t), source));
  }
}

const std::string& Workload::system_prompt(const Conversation& conversation) const {
  if (conversation.prefix == Prefix::subagent && !subagent_prompts_.empty()) {
    return subagent_prompts_[conversation.subagent_type % subagent_prompts_.size()];
  }
  return system_prompt_;
}

const std::string& Workload::tools_json(const Conversation& conversation) const {
  if (conversation.prefix == Prefix::subagent && !subagent_tools_json_.empty()) {
    return subagent_tools_json_[conversation.subagent_type % subagent_tools_json_.size()];
  }
  return tools_json_;
}

std::size_t Workload::prompt_chars(const Conversation& conversation) const {
  std::size_t chars = system_prompt(conversation).size() + tools_json(conversation).size();
  for (const Message& m : conversation.messages) {
    chars += m.text.size();
    for (const ToolCall& c : m.calls) {
      chars += c.name.size() + c.input_json.size();
    }
    for (const ToolResult& r : m.results) {
      chars += r.content.size();
    }
  }
  return chars;
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

  boost::json::object body;
  body["model"] = model;
  body["max_tokens"] = workload.config().max_output;
  body["stream"] = true;
  boost::json::array system;
  if (workload.config().billing_header) {
    system.emplace_back(text_block(billing_line(workload.config().seed, conversation.session_index,
                                                conversation.agent_id, conversation.interactive)));
  }
  if (const std::string& prompt = workload.system_prompt(conversation); !prompt.empty()) {
    system.emplace_back(text_block(prompt));
  }
  if (!system.empty()) {
    body["system"] = std::move(system);
  }
  body["messages"] = anthropic_messages(conversation.messages);
  if (const std::string& tools = workload.tools_json(conversation); !tools.empty()) {
    body["tools"] = boost::json::parse(tools);
  }
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
  if (!conversation.agent_id.empty()) {
    spec.headers.emplace_back("X-Claude-Code-Agent-Id", conversation.agent_id);
  }
  spec.body = boost::json::serialize(body);
  return spec;
}

std::string anthropic_messages_body(const std::vector<Message>& messages) {
  boost::json::object body;
  body["messages"] = anthropic_messages(messages);
  return boost::json::serialize(body);
}

HttpRequestSpec render_openai(const Workload& workload, const Conversation& conversation,
                              std::string_view model) {
  boost::json::array messages;
  if (const std::string& prompt = workload.system_prompt(conversation); !prompt.empty()) {
    boost::json::object sys;
    sys["role"] = "system";
    sys["content"] = prompt;
    messages.emplace_back(std::move(sys));
  }
  for (const Message& m : conversation.messages) {
    add_openai_messages(messages, m);
  }
  boost::json::object body;
  body["model"] = model;
  body["messages"] = std::move(messages);
  if (const std::string& tools = workload.tools_json(conversation); !tools.empty()) {
    body["tools"] = openai_tools(tools);
  }
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

std::vector<std::size_t> split_between_tenants(std::size_t agents, const std::vector<std::uint32_t>& shares) {
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  std::vector<std::size_t> counts(shares.size(), 0);
  if (shares.empty() || total <= 0) {
    return std::vector<std::size_t>(agents, 0);
  }
  // Largest remainder: each tenant its whole part, the rest one each by the largest fractions.
  std::vector<std::pair<double, std::size_t>> rest;
  std::size_t given = 0;
  for (std::size_t t = 0; t < shares.size(); ++t) {
    const double exact = static_cast<double>(agents) * shares[t] / total;
    counts[t] = static_cast<std::size_t>(exact);
    given += counts[t];
    rest.emplace_back(-(exact - static_cast<double>(counts[t])), t);
  }
  std::sort(rest.begin(), rest.end());
  for (std::size_t i = 0; given < agents; ++i, ++given) {
    ++counts[rest[i % rest.size()].second];
  }
  // Interleaved: each agent goes to the tenant furthest behind its count, the first of equals.
  std::vector<std::size_t> out;
  std::vector<std::size_t> taken(shares.size(), 0);
  for (std::size_t a = 0; a < agents; ++a) {
    std::size_t best = shares.size();
    for (std::size_t t = 0; t < shares.size(); ++t) {
      if (taken[t] >= counts[t]) {
        continue;
      }
      const auto behind = [&](std::size_t i) {
        return (static_cast<double>(taken[i]) + 0.5) / static_cast<double>(counts[i]);
      };
      if (best == shares.size() || behind(t) < behind(best)) {
        best = t;
      }
    }
    ++taken[best];
    out.push_back(best);
  }
  return out;
}

}  // namespace warden::workload
