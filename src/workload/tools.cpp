#include "workload/tools.hpp"

#include <fmt/core.h>

#include <boost/json.hpp>

#include <array>

#include "workload/text.hpp"

namespace warden::workload {

namespace {

// Claude Code 2.1.332's main-thread tools and a general-purpose subagent's (spec captures).
constexpr std::array<std::string_view, 14> kMainTools = {
    "Agent", "Bash",  "Glob",         "Grep",     "LS",        "ExitPlanMode", "Read",
    "Edit",  "Write", "NotebookEdit", "WebFetch", "TodoWrite", "WebSearch",    "BashOutput"};
constexpr std::array<std::string_view, 10> kSubagentTools = {
    "Bash", "Glob", "Grep", "LS", "Read", "WebFetch", "TodoWrite", "WebSearch", "BashOutput", "KillShell"};
constexpr std::array<std::string_view, 3> kSubagentTypes = {"general-purpose", "Explore", "Plan"};
constexpr std::array<std::string_view, 8> kFiles = {"src/main.py",   "src/util.py",        "README.md",
                                                    "setup.cfg",     "tests/test_main.py", "src/cli.py",
                                                    "docs/notes.md", "src/config.py"};

std::string hex(base::SplitMix64& rng, std::size_t digits) {
  std::string out;
  while (out.size() < digits) {
    out += fmt::format("{:016x}", rng.next());
  }
  out.resize(digits);
  return out;
}

std::string_view file(base::SplitMix64& rng) {
  return kFiles[rng.below(kFiles.size())];
}

}  // namespace

std::span<const std::string_view> main_tool_names() {
  return kMainTools;
}

std::span<const std::string_view> subagent_tool_names() {
  return kSubagentTools;
}

std::string_view subagent_type_name(std::size_t type) {
  return kSubagentTypes[type % kSubagentTypes.size()];
}

std::string tool_definitions(std::span<const std::string_view> names, std::size_t count, std::size_t tokens,
                             std::uint64_t stream, const TextSource& text) {
  boost::json::array tools;
  for (std::size_t i = 0; i < count && !names.empty(); ++i) {
    // Sizes differ between tools as they do in the real client; they sum to `tokens`.
    const std::size_t share = tokens / count + (i < tokens % count ? 1 : 0);
    boost::json::object property;
    property["type"] = "string";
    property["description"] = "The argument of the tool.";
    boost::json::object properties;
    properties["argument"] = std::move(property);
    boost::json::object schema;
    schema["type"] = "object";
    schema["properties"] = std::move(properties);
    schema["required"] = boost::json::array{"argument"};
    boost::json::object tool;
    tool["name"] = names[i % names.size()];
    tool["description"] = text(stream_seed(stream, i), std::max<std::size_t>(share, 1));
    tool["input_schema"] = std::move(schema);
    tools.emplace_back(std::move(tool));
  }
  return boost::json::serialize(tools);
}

ToolCall draw_tool_call(base::SplitMix64& rng, bool agent, std::size_t subagent_type) {
  ToolCall call;
  call.id = "toolu_" + hex(rng, 24);
  boost::json::object input;
  if (agent) {
    call.name = "Agent";
    input["description"] = "Explore the project";
    input["prompt"] = "Find where the configuration is read and summarize it.";
    input["subagent_type"] = subagent_type_name(subagent_type);
    call.input_json = boost::json::serialize(input);
    return call;
  }
  switch (rng.below(5)) {
    case 0:
      call.name = "Read";
      input["file_path"] = fmt::format("/project/{}", file(rng));
      break;
    case 1:
      call.name = "Grep";
      input["pattern"] = "config";
      input["path"] = "/project/src";
      break;
    case 2:
      call.name = "Glob";
      input["pattern"] = "**/*.py";
      break;
    case 3:
      call.name = "Bash";
      input["command"] = "ls -la /project";
      input["description"] = "List the project folder";
      break;
    default:
      call.name = "LS";
      input["path"] = "/project";
      break;
  }
  call.input_json = boost::json::serialize(input);
  return call;
}

}  // namespace warden::workload
