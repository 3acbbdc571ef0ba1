#include "whatif/clients.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/core.h>
#include <xxhash.h>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "base/splitmix.hpp"
#include "protocol/request.hpp"
#include "whatif/sim_types.hpp"
#include "workload/make_loop.hpp"

namespace warden::whatif {

namespace {

// Session indices of level i start at i * kLevelStride: every level has its own conversations, and a
// second policy pass replays exactly the same ones (the reference's "same random seed").
constexpr std::uint64_t kLevelStride = 1'000'000;

constexpr std::uint64_t kJitterStream = 0x7417E7;

std::uint32_t common_prefix(const engine::Tokens& a, const engine::Tokens& b) {
  const auto end = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<std::uint32_t>(end.first - a.begin());
}

// What RequestInfo::first_message_hash is to the gateway: a digest of the conversation's first message
// (it changes only when a compaction replaces the history), 0 for none.
std::uint64_t first_message_digest(const workload::Conversation& conv) {
  if (conv.messages.empty()) {
    return 0;
  }
  const std::string& text = conv.messages.front().text;
  return base::splitmix64(XXH3_64bits(text.data(), text.size()) + conv.compactions);
}

}  // namespace

Clients::Clients(const SimulationConfig& config)
    : config_(config), workload_(config.workload), jitter_rng_(level_seed(config.seed, kJitterStream, 0)) {}

std::uint64_t Clients::start_loop(std::size_t sessions, std::size_t level_index, double now, bool ceiling) {
  ceiling_ = ceiling;
  jitter_rng_ = core::SplitMixRng(level_seed(config_.seed, kJitterStream, level_index));
  if (level_index > 0 && config_.carry_over && loop_) {
    const std::uint64_t carried = loop_->sessions_started();
    if (loop_->grow(sessions, now)) {
      prompts_.resize(loop_->slots());
      sequences_.resize(ceiling_ ? loop_->slots() : 0);
      return carried;
    }
  }
  loop_ = workload::make_loop(workload_, sessions, now, level_index * kLevelStride);
  make_groups(sessions);
  prompts_.assign(loop_->slots(), IncrementalPrompt{});
  sequences_.assign(ceiling_ ? loop_->slots() : 0, engine::Tokens{});
  return 0;
}

std::size_t direct_agents(std::size_t agents, double share) {
  const double exact = static_cast<double>(agents) * std::clamp(share, 0.0, 1.0);
  return std::min(agents, static_cast<std::size_t>(std::llround(exact)));
}

// The level's groups: each tenant's headless agents (or the headless ones as one) through the warden, the
// other client's agents (SimulationConfig::direct), then the interactive sessions; none when the agents are
// headless of no tenant alone (the figures are the level's row).
void Clients::make_groups(std::size_t agents) {
  groups_.clear();
  group_of_agent_.clear();
  const workload::AgenticConfig& a = config_.workload.agentic;
  const std::size_t direct = direct_agents(agents, config_.direct.share);
  if (!a.enabled || (a.interactive == 0 && config_.tenants.empty() && direct == 0)) {
    return;
  }
  const std::size_t through_warden = agents - direct;
  if (config_.tenants.empty()) {
    groups_.push_back(GroupStats{.name = direct > 0 ? "warden" : "headless",
                                 .agents = static_cast<std::uint32_t>(through_warden)});
    group_of_agent_.assign(through_warden, 0);
  } else {
    for (std::size_t t = 0; t < config_.tenants.size(); ++t) {
      groups_.push_back(GroupStats{.name = fmt::format("tenant {}", t + 1), .tenant = t + 1});
    }
    group_of_agent_ = workload::split_between_tenants(through_warden, config_.tenants);
    for (const std::size_t g : group_of_agent_) {
      ++groups_[g].agents;
    }
  }
  if (direct > 0) {
    add_direct_group(agents, direct);
  }
  if (a.interactive > 0) {
    group_of_agent_.insert(group_of_agent_.end(), a.interactive, groups_.size());
    groups_.push_back(GroupStats{.name = "interactive",
                                 .work_class = core::WorkClass::interactive,
                                 .agents = static_cast<std::uint32_t>(a.interactive)});
  }
}

// The other client's `direct` agents among the level's `agents` headless ones, spread over their order (as
// tenants are); the warden's keep their groups in order around them.
void Clients::add_direct_group(std::size_t agents, std::size_t direct) {
  const std::vector<std::size_t> other = workload::split_between_tenants(
      agents, {static_cast<std::uint32_t>(agents - direct), static_cast<std::uint32_t>(direct)});
  std::vector<std::size_t> groups;
  std::size_t warden_agent = 0;
  for (std::size_t agent = 0; agent < agents; ++agent) {
    groups.push_back(other[agent] == 1 ? groups_.size() : group_of_agent_[warden_agent++]);
  }
  group_of_agent_ = std::move(groups);
  groups_.push_back(
      GroupStats{.name = "direct", .agents = static_cast<std::uint32_t>(direct), .direct = true});
}

std::vector<Flight> Clients::send_ready(double now) {
  std::vector<Flight> sent;
  for (const std::size_t slot : loop_->take_ready(now)) {
    sent.push_back(request(slot, now));
  }
  return sent;
}

// The request of the slot's turn, sent at `now` plus the client's jitter.
Flight Clients::request(std::size_t slot, double now) {
  const workload::Conversation& conv = loop_->conversation(slot);
  Flight f;
  f.slot = slot;
  f.started = now + (config_.think_jitter > 0 ? config_.think_jitter * jitter_rng_.unit() : 0.0);
  f.turn = conv.turn;
  auto prompt = prompts_[slot].render(workload_, conv);
  if (!prompt) {
    f.failed = true;
  } else {
    f.prompt = std::move(*prompt);
  }
  const ThreadKeys keys = thread_keys(conv);
  f.session_hash = keys.thread;
  f.thread_session = keys.session;
  f.first_message = first_message_digest(conv);
  f.start = prompt_start_digest(conv);
  f.task_start = workload::is_task_start(conv);
  const std::size_t agent = loop_->session_of(slot);
  f.work_class = loop_->interactive(agent) ? core::WorkClass::interactive : core::WorkClass::headless;
  if (agent < group_of_agent_.size()) {
    f.group = group_of_agent_[agent];
    f.tenant = groups_[f.group].tenant;
    f.direct = groups_[f.group].direct;
  }
  if (ceiling_ && !f.task_start) {
    // What the thread's previous request left in a cache that kept everything.
    f.assume_cached = common_prefix(sequences_[slot], f.prompt);
  }
  // What the gateway's inspection estimates from the body's text (prompt bytes / 4).
  const std::size_t bytes = workload_.prompt_chars(conv);
  f.prompt_tokens_estimate = static_cast<std::uint32_t>(std::max<std::size_t>(1, bytes / 4));
  return f;
}

std::optional<workload::TurnEnd> Clients::complete(Flight& f, double now) {
  if (f.failed) {
    loop_->fail(f.slot, now, 0.0);
    return std::nullopt;
  }
  if (ceiling_) {
    f.sent.insert(f.sent.end(), f.reply.begin(), f.reply.end());
    sequences_[f.slot] = std::move(f.sent);
  }
  return loop_->complete(f.slot, now, engine::detokenize(f.reply));
}

std::uint32_t Clients::live_sessions() const {
  // Every session has a main thread (its other threads are subagents).
  std::uint32_t live = 0;
  for (std::size_t s = 0; s < loop_->slots(); ++s) {
    const workload::Conversation& c = loop_->conversation(s);
    live += c.messages.empty() || !c.agent_id.empty() ? 0 : 1;
  }
  return live;
}

// Through the gateway's own inspection code (X-Claude-Code-Session-Id, X-Claude-Code-Agent-Id): a subagent
// is a thread of its session with a key of its own.
Clients::ThreadKeys Clients::thread_keys(const workload::Conversation& conv) {
  const std::string id = conv.session_id + '/' + conv.agent_id;
  if (const auto it = thread_keys_.find(id); it != thread_keys_.end()) {
    return it->second;
  }
  std::vector<protocol::HeaderField> headers{{"X-Claude-Code-Session-Id", conv.session_id}};
  if (!conv.agent_id.empty()) {
    headers.push_back({"X-Claude-Code-Agent-Id", conv.agent_id});
  }
  const auto info =
      protocol::inspect_request(protocol::ApiKind::anthropic_messages,
                                protocol::HeaderLookup{std::span(headers)}, R"({"model":"m","messages":[]})");
  const ThreadKeys keys = info ? ThreadKeys{info->thread_hash, info->session_hash} : ThreadKeys{};
  thread_keys_.emplace(id, keys);
  return keys;
}

// The digest of the prompt's start the gateway takes (protocol::prompt_start(), the billing line left out
// as a gateway that normalizes prompts does): every main thread of the workload starts with its system
// prompt and tools, every subagent of one type with that type's.
protocol::PromptStart Clients::prompt_start_digest(const workload::Conversation& conv) {
  const std::string& system = workload_.system_prompt(conv);
  const std::string& tools = workload_.tools_json(conv);
  const auto key = std::make_pair(system.data(), tools.data());
  if (const auto it = start_digests_.find(key); it != start_digests_.end()) {
    return it->second;
  }
  boost::json::object request{{"model", "m"}, {"system", system}};
  if (!tools.empty()) {
    boost::system::error_code ec;
    request["tools"] = boost::json::parse(tools, ec);
  }
  const std::string body = boost::json::serialize(request);
  const auto layout = protocol::scan_layout(body);
  const protocol::PromptStart digest =
      layout ? protocol::prompt_start(body, *layout, false) : protocol::PromptStart{};
  start_digests_.emplace(key, digest);
  return digest;
}

}  // namespace warden::whatif
