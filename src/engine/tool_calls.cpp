#include "engine/tool_calls.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>
#include <span>
#include <string_view>

#include "base/splitmix.hpp"

namespace warden::engine {

namespace json = boost::json;

namespace {

constexpr std::uint32_t kMaxRounds = 50;
constexpr std::size_t kMaxCalls = 4;
// Once a reply holds two calls, the chance of one more: 3+ of 2+ call replies in Claude Code sessions
// (docs/sim.md).
constexpr double kMoreCalls = 0.4;
constexpr std::array<std::string_view, 4> kShellTools{"Bash", "exec_command", "shell_command", "shell"};
constexpr std::array<std::string_view, 2> kSubagentTools{"Agent", "Task"};
// Tools a subagent ends its run with, its report as `message` (Claude Code's interactive subagents).
constexpr std::array<std::string_view, 1> kReportTools{"SubagentHandback"};
constexpr std::array<std::string_view, 2> kSubagentDescriptions{"Survey the project files",
                                                                "Summarise the project files"};

// A stream of uniform draws in (0, 1) from one seed.
class Draws {
 public:
  explicit Draws(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return state_ = base::splitmix64(state_); }
  double uniform() { return (static_cast<double>(next() >> 11U) + 0.5) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

std::string hex24(std::uint64_t a, std::uint64_t b) {
  constexpr std::string_view digits = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    out.push_back(digits[(a >> (60 - 4 * i)) & 0xfU]);
  }
  for (int i = 0; i < 8; ++i) {
    out.push_back(digits[(b >> (60 - 4 * i)) & 0xfU]);
  }
  return out;
}

std::string lowercase(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

// "subagent(s)" or "sub-agent(s)" as a word: not a tool name such as SubagentHandback.
bool asks_for_subagent(std::string_view text) {
  const std::string lower = lowercase(text);
  auto letter = [&](std::size_t i) { return std::isalnum(static_cast<unsigned char>(lower[i])) != 0; };
  for (std::string_view word : {"subagent", "sub-agent"}) {
    for (auto at = lower.find(word); at != std::string::npos; at = lower.find(word, at + 1)) {
      std::size_t end = at + word.size();
      if (end < lower.size() && lower[end] == 's') {
        ++end;
      }
      if ((at == 0 || !letter(at - 1)) && (end == lower.size() || !letter(end))) {
        return true;
      }
    }
  }
  return false;
}

// What a subagent hands back to its caller: what it looked at.
std::string report_text(const AgentRequest& r) {
  std::string text = "Looked through the working directory";
  for (std::size_t i = 0; i < r.files.size(); ++i) {
    text += (i == 0 ? ": " : ", ") + r.files[i];
  }
  return text + ".";
}

const OfferedTool* first_offered(const AgentRequest& r, std::span<const std::string_view> names) {
  for (std::string_view name : names) {
    if (const OfferedTool* t = r.find(name)) {
      return t;
    }
  }
  return nullptr;
}

// A call of `tool` with `args`, or nothing when the schema requires an argument the stand-in cannot fill.
std::optional<ToolCall> call(const OfferedTool* tool, json::object args) {
  if (tool == nullptr) {
    return std::nullopt;
  }
  for (const auto& key : tool->required) {
    if (!args.contains(key)) {
      return std::nullopt;
    }
  }
  return ToolCall{{}, tool->name, json::serialize(args)};
}

std::optional<ToolCall> shell_call(const AgentRequest& r, const std::string& command,
                                   std::string_view description) {
  const OfferedTool* shell = first_offered(r, kShellTools);
  if (shell == nullptr) {
    return std::nullopt;
  }
  json::object args;
  const std::string_view key = shell->has("cmd") ? "cmd" : "command";
  if (shell->command_is_array) {
    args[key] = json::array{"bash", "-lc", command};
  } else {
    args[key] = command;
  }
  if (shell->has("description")) {
    args["description"] = description;
  }
  return call(shell, std::move(args));
}

std::optional<ToolCall> read_call(const AgentRequest& r, const std::string& file) {
  const OfferedTool* read = r.find("Read");
  if (read != nullptr && !r.cwd.empty()) {
    json::object args;
    args[read->has("path") && !read->has("file_path") ? "path" : "file_path"] = r.cwd + "/" + file;
    return call(read, std::move(args));
  }
  return shell_call(r, "head -n 60 " + file, "Show the start of " + file);
}

// Listing and searching, in the order an agent exploring a folder tries them.
std::vector<ToolCall> explore_calls(const AgentRequest& r) {
  std::vector<std::optional<ToolCall>> all{
      shell_call(r, "ls", "List files in the working directory"),
      call(r.find("Glob"), json::object{{"pattern", "**/*"}}),
      call(r.find("LS"), json::object{{"path", r.cwd}}),
      call(r.find("Grep"), json::object{{"pattern", "TODO"}}),
      shell_call(r, "ls -la", "List files with their sizes"),
      shell_call(r, "pwd", "Show the working directory"),
  };
  std::vector<ToolCall> out;
  for (auto& c : all) {
    if (c && (c->name != "LS" || !r.cwd.empty()) &&
        r.earlier_calls.find(c->name + " " + c->arguments) == std::string::npos) {
      out.push_back(std::move(*c));
    }
  }
  return out;
}

std::vector<ToolCall> read_calls(const AgentRequest& r, std::size_t count, Draws& draws) {
  std::vector<std::string> unread;
  for (const auto& f : r.files) {
    if (r.earlier_calls.find(f) == std::string::npos) {
      unread.push_back(f);
    }
  }
  std::vector<ToolCall> out;
  const std::size_t start = unread.empty() ? 0 : draws.next() % unread.size();
  for (std::size_t i = 0; i < unread.size() && out.size() < count; ++i) {
    if (auto c = read_call(r, unread[(start + i) % unread.size()])) {
      out.push_back(std::move(*c));
    }
  }
  return out;
}

std::vector<ToolCall> subagent_calls(const AgentRequest& r, std::size_t count) {
  const OfferedTool* agent = first_offered(r, kSubagentTools);
  std::vector<ToolCall> out;
  for (std::size_t i = 0; agent != nullptr && i < std::min(count, kSubagentDescriptions.size()); ++i) {
    json::object args{{"description", kSubagentDescriptions[i]}, {"prompt", kDelegatedTask}};
    if (agent->requires_("subagent_type")) {
      args["subagent_type"] = "general-purpose";
    }
    if (auto c = call(agent, std::move(args))) {
      out.push_back(std::move(*c));
    }
  }
  return out;
}

// Calls in this reply: 1, then more with probability `parallel`, then kMoreCalls each.
std::size_t draw_count(const ToolCallModel& model, Draws& draws) {
  std::size_t n = 1;
  if (draws.uniform() < model.parallel) {
    ++n;
    while (n < kMaxCalls && draws.uniform() < kMoreCalls) {
      ++n;
    }
  }
  return n;
}

// A round of work: read what a listing showed, else list or search.
std::vector<ToolCall> work_calls(const ToolCallModel& model, const AgentRequest& r, Draws& draws) {
  auto calls = read_calls(r, draw_count(model, draws), draws);
  if (calls.empty()) {
    calls = explore_calls(r);
    calls.resize(std::min(calls.size(), draw_count(model, draws)), ToolCall{});
  }
  return calls;
}

}  // namespace

std::uint32_t draw_tool_rounds(const ToolCallModel& model, std::uint64_t task_seed) {
  if (!(model.rounds > 0)) {
    return 0;
  }
  // Geometric on {0, 1, ...} with mean `rounds`: P(N >= k) = q^k, q = rounds / (rounds + 1).
  const double q = model.rounds / (model.rounds + 1.0);
  const double u = Draws(task_seed ^ 0x746f6f6c726f756eULL).uniform();
  const double n = std::floor(std::log(u) / std::log(q));
  return static_cast<std::uint32_t>(std::clamp(n, 0.0, static_cast<double>(kMaxRounds)));
}

std::vector<ToolCall> decide_tool_calls(const ToolCallModel& model, const AgentRequest& r,
                                        std::uint64_t seed) {
  if (!(model.rounds > 0) || r.tools.empty()) {
    return {};
  }
  if (lowercase(r.last_text).find("text only") != std::string::npos) {
    return {};  // words that forbid tools (Claude Code's compaction: "Respond with TEXT ONLY")
  }
  const std::uint64_t task_seed = stable_hash(r.task, seed);
  Draws draws(task_seed ^ base::splitmix64(r.rounds + 1));
  const bool delegated = r.task.find(kDelegatedTask) != std::string::npos;
  // An explicit ask counts in the conversation's opening prompt only: later user-role messages are often
  // the client's own (a subagent's report that mentions "this subagent's work").
  const bool asked = r.first_task && asks_for_subagent(r.task);
  const bool subagent = !delegated && r.rounds == 0 && (asked || Draws(task_seed).uniform() < model.subagent);
  // A subagent always does some work before it reports: at least one round.
  const std::uint32_t rounds = std::max<std::uint32_t>(draw_tool_rounds(model, task_seed), delegated ? 1 : 0);
  std::vector<ToolCall> calls;
  if (subagent) {
    calls = subagent_calls(r, draw_count(model, draws));
  }
  if (calls.empty() && r.rounds < rounds) {
    calls = work_calls(model, r, draws);
  }
  if (calls.empty()) {
    // The text reply, unless the client wants the report through a tool (a subagent's hand-back).
    auto report = call(first_offered(r, kReportTools), json::object{{"message", report_text(r)}});
    if (!report) {
      return {};
    }
    calls.push_back(std::move(*report));
  }
  for (std::size_t i = 0; i < calls.size(); ++i) {
    calls[i].id =
        hex24(base::splitmix64(task_seed ^ r.position), base::splitmix64(seed + r.position * 8 + i));
  }
  return calls;
}

ToolReply make_tool_reply(std::vector<ToolCall> calls) {
  ToolReply reply;
  std::string text;
  for (const auto& c : calls) {
    if (!text.empty()) {
      text.push_back('\n');  // how the chat template joins the calls of one assistant message
    }
    text += tool_call_text(c.name, c.arguments);
    reply.ends.push_back(static_cast<std::uint32_t>(count_tokens(text)));
  }
  reply.tokens = tokenize(text);
  if (!reply.ends.empty()) {
    reply.ends.back() = static_cast<std::uint32_t>(reply.tokens.size());
  }
  reply.calls = std::move(calls);
  return reply;
}

ToolReply tool_reply_for(const ToolCallModel& model, ApiKind kind, const json::value& body,
                         std::uint64_t seed) {
  if (!(model.rounds > 0)) {
    return {};
  }
  return make_tool_reply(decide_tool_calls(model, read_agent_request(kind, body), seed));
}

}  // namespace warden::engine
