#include "engine/agent_request.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <string_view>

namespace warden::engine {

namespace json = boost::json;

namespace {

constexpr std::size_t kMaxFiles = 64;

enum class Step { user_text, tool_calls, tool_result };

struct Entry {
  Step step;
  std::string text;
};

std::string_view string_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->as_string()) : std::string_view{};
}

std::string_view type_of(const json::value& v) {
  return v.is_object() ? string_at(v.as_object(), "type") : std::string_view{};
}

// The text of a content value: a string, or the text of its text-like blocks/parts, one per line, and
// of the tool results it holds unless `results` is false.
std::string text_of(const json::value* content, bool results = true) {
  if (content == nullptr) {
    return {};
  }
  if (content->is_string()) {
    return std::string(content->as_string());
  }
  std::string text;
  if (!content->is_array()) {
    return text;
  }
  for (const auto& part : content->as_array()) {
    const std::string_view type = type_of(part);
    if (type == "text" || type == "input_text" || type == "output_text") {
      text.append(string_at(part.as_object(), "text"));
      text.push_back('\n');
    } else if (type == "tool_result" && results) {
      text.append(text_of(part.as_object().if_contains("content")));
      text.push_back('\n');  // results of parallel calls: one per line, never run together
    }
  }
  return text;
}

// A tool call as the task's history keeps it: its name and its arguments' JSON text.
std::string call_text(std::string_view name, const json::value* arguments) {
  std::string text(name);
  text.push_back(' ');
  if (arguments != nullptr) {
    text.append(arguments->is_string() ? std::string(arguments->as_string()) : json::serialize(*arguments));
  }
  text.push_back('\n');
  return text;
}

// The working directory a prompt names: Claude Code's environment section or Codex's <cwd> element.
void find_cwd(std::string_view text, std::string& cwd) {
  for (std::string_view marker : {"Primary working directory: ", "Working directory: "}) {
    if (const auto at = text.find(marker); at != std::string_view::npos) {
      const auto start = at + marker.size();
      cwd = text.substr(start, text.find('\n', start) - start);
      return;
    }
  }
  if (const auto at = text.find("<cwd>"); at != std::string_view::npos) {
    const auto end = text.find("</cwd>", at);
    if (end != std::string_view::npos) {
      cwd = text.substr(at + 5, end - at - 5);
    }
  }
}

// A user message's own text: without the <system-reminder> blocks a client adds to it (Claude Code's
// attribution notes, file-read echoes, background-task notifications), which are not the user speaking.
std::string without_reminders(std::string text) {
  constexpr std::string_view open = "<system-reminder>";
  constexpr std::string_view close = "</system-reminder>";
  for (auto at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    const auto end = text.find(close, at);
    text.erase(at, end == std::string::npos ? std::string::npos : end + close.size() - at);
  }
  const auto first = text.find_first_not_of(" \n\t");
  return first == std::string::npos ? std::string{} : text.substr(first);
}

// tool_choice "none" (OpenAI) or {"type": "none"} (Anthropic): the client wants text.
bool tools_refused(const json::object& o) {
  const auto* choice = o.if_contains("tool_choice");
  if (choice == nullptr) {
    return false;
  }
  if (choice->is_string()) {
    return choice->as_string() == "none";
  }
  return choice->is_object() && string_at(choice->as_object(), "type") == "none";
}

bool file_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

// A line of a listing that names a plain file: "notes.txt", or the last field of `ls -l` ("-rw-r--r-- ...").
std::string_view file_in_line(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  if (line.starts_with('-') && line.find(' ') != std::string_view::npos) {
    line = line.substr(line.rfind(' ') + 1);
  }
  const auto dot = line.rfind('.');
  if (line.empty() || line.size() > 100 || line.front() == '.' || line.front() == '-' ||
      dot == std::string_view::npos || dot + 1 == line.size() ||
      !std::all_of(line.begin(), line.end(), file_name_char)) {
    return {};
  }
  return line;
}

void add_files(std::string_view text, std::vector<std::string>& files) {
  std::size_t start = 0;
  while (start < text.size() && files.size() < kMaxFiles) {
    const auto end = std::min(text.find('\n', start), text.size());
    const std::string_view name = file_in_line(text.substr(start, end - start));
    if (!name.empty() && std::find(files.begin(), files.end(), name) == files.end()) {
      files.emplace_back(name);
    }
    start = end + 1;
  }
}

OfferedTool offered_tool(const json::value& tool) {
  OfferedTool out;
  if (!tool.is_object()) {
    return out;
  }
  const json::object* t = &tool.as_object();
  if (const auto* fn = t->if_contains("function"); fn != nullptr && fn->is_object()) {
    t = &fn->as_object();  // OpenAI chat: {"type": "function", "function": {...}}
  }
  out.name = string_at(*t, "name");
  const json::value* schema = t->if_contains("input_schema");
  if (schema == nullptr) {
    schema = t->if_contains("parameters");
  }
  if (schema == nullptr || !schema->is_object()) {
    return out;
  }
  if (const auto* props = schema->as_object().if_contains("properties");
      props != nullptr && props->is_object()) {
    for (const auto& p : props->as_object()) {
      out.properties.emplace_back(p.key());
      if (p.key() == "command" && type_of(p.value()) == "array") {
        out.command_is_array = true;
      }
    }
  }
  if (const auto* req = schema->as_object().if_contains("required"); req != nullptr && req->is_array()) {
    for (const auto& r : req->as_array()) {
      if (r.is_string()) {
        out.required.emplace_back(r.as_string());
      }
    }
  }
  return out;
}

class Reader {
 public:
  explicit Reader(AgentRequest& out) : out_(out) {}

  void context(std::string_view text) { find_cwd(text, out_.cwd); }

  void add(Step step, std::string text) {
    context(text);
    ++out_.position;
    out_.last_text.clear();
    if (step == Step::user_text) {
      text = without_reminders(std::move(text));
      if (text.empty()) {
        return;  // only a client's notes: the task goes on
      }
      out_.last_text = text;
    }
    if (step == Step::tool_calls && !entries_.empty() && entries_.back().step == Step::tool_calls) {
      entries_.back().text += text;  // parallel calls sent as separate items: one round
      return;
    }
    entries_.push_back({step, std::move(text)});
  }

  // The task: the entries after the last user text.
  void finish() {
    auto it = std::find_if(entries_.rbegin(), entries_.rend(),
                           [](const Entry& e) { return e.step == Step::user_text; });
    if (it != entries_.rend()) {
      out_.task = it->text;
      out_.first_task = std::none_of(std::next(it), entries_.rend(),
                                     [](const Entry& e) { return e.step == Step::user_text; });
    }
    for (auto e = it.base(); e != entries_.end(); ++e) {
      if (e->step == Step::tool_calls) {
        ++out_.rounds;
        out_.earlier_calls += e->text;
      } else if (e->step == Step::tool_result) {
        add_files(e->text, out_.files);
      }
    }
  }

  void anthropic(const json::object& m) {
    const std::string_view role = string_at(m, "role");
    const json::value* content = m.if_contains("content");
    if (role == "system") {
      context(text_of(content));
      return;
    }
    const bool blocks = content != nullptr && content->is_array();
    auto has_block = [&](std::string_view type) {
      return blocks && std::any_of(content->as_array().begin(), content->as_array().end(),
                                   [&](const json::value& b) { return type_of(b) == type; });
    };
    if (role == "user" && has_block("tool_result")) {
      add(Step::tool_result, text_of(content));
      out_.last_text = without_reminders(text_of(content, false));  // words sent along with the results
    } else if (role == "user") {
      add(Step::user_text, text_of(content));
    } else if (has_block("tool_use")) {
      std::string calls;
      for (const auto& b : content->as_array()) {
        if (type_of(b) == "tool_use") {
          calls += call_text(string_at(b.as_object(), "name"), b.as_object().if_contains("input"));
        }
      }
      add(Step::tool_calls, std::move(calls));
    }
  }

  void chat(const json::object& m) {
    const std::string_view role = string_at(m, "role");
    const json::value* content = m.if_contains("content");
    if (role == "user") {
      add(Step::user_text, text_of(content));
    } else if (role == "tool" || role == "function") {
      add(Step::tool_result, text_of(content));
    } else if (role == "assistant") {
      const auto* calls = m.if_contains("tool_calls");
      if (calls == nullptr || !calls->is_array() || calls->as_array().empty()) {
        return;
      }
      std::string text;
      for (const auto& c : calls->as_array()) {
        const auto* fn = c.is_object() ? c.as_object().if_contains("function") : nullptr;
        if (fn != nullptr && fn->is_object()) {
          text += call_text(string_at(fn->as_object(), "name"), fn->as_object().if_contains("arguments"));
        }
      }
      add(Step::tool_calls, std::move(text));
    } else {
      context(text_of(content));
    }
  }

  void responses(const json::object& item) {
    const std::string_view type = string_at(item, "type");
    const std::string_view role = string_at(item, "role");
    if (type == "message" || (type.empty() && !role.empty())) {
      std::string text = text_of(item.if_contains("content"));
      if (role == "user" && !text.starts_with("<environment_context>")) {
        add(Step::user_text, std::move(text));
      } else {
        context(text);
      }
    } else if (type.ends_with("_call_output")) {
      const auto* output = item.if_contains("output");
      add(Step::tool_result,
          output != nullptr && output->is_string() ? std::string(output->as_string()) : text_of(output));
    } else if (type.ends_with("_call")) {
      const auto* args = item.if_contains("arguments");
      add(Step::tool_calls,
          call_text(string_at(item, "name"), args != nullptr ? args : item.if_contains("input")));
    }
  }

 private:
  AgentRequest& out_;
  std::vector<Entry> entries_;
};

void each_object(const json::value* array, auto&& fn) {
  if (array == nullptr || !array->is_array()) {
    return;
  }
  for (const auto& v : array->as_array()) {
    if (v.is_object()) {
      fn(v.as_object());
    }
  }
}

}  // namespace

bool OfferedTool::has(std::string_view property) const {
  return std::find(properties.begin(), properties.end(), property) != properties.end();
}

bool OfferedTool::requires_(std::string_view property) const {
  return std::find(required.begin(), required.end(), property) != required.end();
}

const OfferedTool* AgentRequest::find(std::string_view name) const {
  const auto it =
      std::find_if(tools.begin(), tools.end(), [&](const OfferedTool& t) { return t.name == name; });
  return it == tools.end() ? nullptr : &*it;
}

AgentRequest read_agent_request(ApiKind kind, const json::value& body) {
  AgentRequest out;
  if (!body.is_object() || kind == ApiKind::completions) {
    return out;
  }
  const json::object& o = body.as_object();
  const auto* tools = o.if_contains("tools");
  if (tools != nullptr && tools->is_array() && !tools_refused(o)) {
    for (const auto& t : tools->as_array()) {
      if (OfferedTool tool = offered_tool(t); !tool.name.empty()) {
        out.tools.push_back(std::move(tool));
      }
    }
  }
  Reader reader(out);
  switch (kind) {
    case ApiKind::anthropic_messages:
      reader.context(text_of(o.if_contains("system")));
      each_object(o.if_contains("messages"), [&](const json::object& m) { reader.anthropic(m); });
      break;
    case ApiKind::chat_completions:
      each_object(o.if_contains("messages"), [&](const json::object& m) { reader.chat(m); });
      break;
    case ApiKind::responses:
      reader.context(string_at(o, "instructions"));
      if (const auto* input = o.if_contains("input"); input != nullptr && input->is_string()) {
        reader.add(Step::user_text, std::string(input->as_string()));
      }
      each_object(o.if_contains("input"), [&](const json::object& item) { reader.responses(item); });
      break;
    case ApiKind::completions:
      break;
  }
  reader.finish();
  return out;
}

}  // namespace warden::engine
