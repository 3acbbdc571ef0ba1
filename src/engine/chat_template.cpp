#include "engine/chat_template.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <string>

namespace warden::engine {

namespace json = boost::json;

namespace {

// Qwen3's tool preamble, so tool definitions weigh what they weigh on the real model.
constexpr std::string_view kToolsHeader =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kToolsFooter =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call>";

void open_block(Tokens& out, std::string_view role) {
  out.push_back(kImStart);
  tokenize_append(role, out);
  out.push_back(kNewline);
}

void close_block(Tokens& out) {
  out.push_back(kImEnd);
  out.push_back(kNewline);
}

void add_block(Tokens& out, std::string_view role, std::string_view text) {
  open_block(out, role);
  tokenize_append(text, out);
  close_block(out);
}

const json::value* field(const json::object& o, std::string_view key) {
  return o.if_contains(key);
}

bool is_null_or_missing(const json::value* v) {
  return v == nullptr || v->is_null();
}

// Appends `piece` to `text`, separated from previous content by a newline (how parts are joined).
void join(std::string& text, std::string_view piece) {
  if (!text.empty()) {
    text.push_back('\n');
  }
  text.append(piece);
}

std::string tool_response_text(std::string_view content) {
  std::string s = "<tool_response>\n";
  s.append(content);
  s.append("\n</tool_response>");
  return s;
}

// Text of the tools block, or an error if `tools` is not an array of objects.
Result<std::string> tools_text(const json::value* tools) {
  if (is_null_or_missing(tools)) {
    return std::string{};
  }
  if (!tools->is_array()) {
    return make_error("'tools' must be an array", "tools");
  }
  if (tools->as_array().empty()) {
    return std::string{};
  }
  std::string s(kToolsHeader);
  for (const auto& t : tools->as_array()) {
    if (!t.is_object()) {
      return make_error("each tool must be an object", "tools");
    }
    s.push_back('\n');
    s.append(json::serialize(t));
  }
  s.append(kToolsFooter);
  return s;
}

// The system block: system text and tools. Nothing when both are empty.
void add_system(Tokens& out, std::string_view system, std::string_view tools, bool has_system) {
  if (!has_system && tools.empty()) {
    return;
  }
  std::string text(system);
  if (!tools.empty()) {
    if (!text.empty()) {
      text.append("\n\n");
    }
    text.append(tools);
  }
  add_block(out, "system", text);
}

Result<const json::object*> body_object(const json::value& body) {
  if (!body.is_object()) {
    return make_error("request body must be a JSON object");
  }
  return &body.as_object();
}

Result<const json::array*> required_array(const json::object& o, std::string_view key) {
  const auto* v = field(o, key);
  if (v == nullptr) {
    return make_error("Field required: '" + std::string(key) + "'", std::string(key));
  }
  if (!v->is_array()) {
    return make_error("'" + std::string(key) + "' must be an array", std::string(key));
  }
  return &v->as_array();
}

std::string_view string_or_empty(const json::object& o, std::string_view key) {
  const auto* v = field(o, key);
  return v != nullptr && v->is_string() ? std::string_view(v->as_string()) : std::string_view{};
}

// ---- OpenAI chat ----------------------------------------------------------------------------------------

Result<std::string> openai_content(const json::value* content, std::string_view param) {
  if (is_null_or_missing(content)) {
    return std::string{};
  }
  if (content->is_string()) {
    return std::string(content->as_string());
  }
  if (!content->is_array()) {
    return make_error("'content' must be a string, an array of content parts or null", std::string(param));
  }
  std::string text;
  for (const auto& part : content->as_array()) {
    if (!part.is_object() || !part.as_object().contains("type") || !part.as_object().at("type").is_string()) {
      return make_error("each content part must be an object with a string 'type'", std::string(param));
    }
    const auto& p = part.as_object();
    const std::string_view type = p.at("type").as_string();
    if (type == "text" || type == "input_text" || type == "refusal") {
      const auto* t = field(p, type == "refusal" ? "refusal" : "text");
      if (t == nullptr || !t->is_string()) {
        return make_error("content part of type '" + std::string(type) + "' needs a string field",
                          std::string(param));
      }
      join(text, t->as_string());
    } else if (type == "image_url" || type == "input_image") {
      join(text, "<|vision_start|><|image_pad|><|vision_end|>");
    } else if (type == "input_audio" || type == "audio_url" || type == "file" || type == "input_file") {
      join(text, "[file]");
    } else {
      return make_error("unknown content part type '" + std::string(type) + "'", std::string(param));
    }
  }
  return text;
}

Result<std::string> openai_tool_calls(const json::value* calls, std::string_view param) {
  if (is_null_or_missing(calls)) {
    return std::string{};
  }
  if (!calls->is_array()) {
    return make_error("'tool_calls' must be an array", std::string(param));
  }
  std::string text;
  for (const auto& c : calls->as_array()) {
    const auto* fn = c.is_object() ? field(c.as_object(), "function") : nullptr;
    if (fn == nullptr || !fn->is_object()) {
      return make_error("each tool call needs a 'function' object", std::string(param));
    }
    const auto& f = fn->as_object();
    const auto* args = field(f, "arguments");
    std::string args_text;
    if (args != nullptr && args->is_string()) {
      args_text = args->as_string();
    } else if (!is_null_or_missing(args)) {
      args_text = json::serialize(*args);
    }
    join(text, tool_call_text(string_or_empty(f, "name"), args_text));
  }
  return text;
}

// ---- Anthropic ------------------------------------------------------------------------------------------

Result<std::string> anthropic_text(const json::value& content, std::string_view param);

Result<std::string> anthropic_block(const json::object& b, std::string_view param) {
  const auto* type = field(b, "type");
  if (type == nullptr || !type->is_string()) {
    return make_error("each content block needs a string 'type'", std::string(param));
  }
  const std::string_view t = type->as_string();
  if (t == "text") {
    const auto* text = field(b, "text");
    if (text == nullptr || !text->is_string()) {
      return make_error("text block needs a string 'text'", std::string(param));
    }
    return std::string(text->as_string());
  }
  if (t == "tool_use" || t == "server_tool_use") {
    const auto* input = field(b, "input");
    return tool_call_text(string_or_empty(b, "name"), input != nullptr ? json::serialize(*input) : "{}");
  }
  if (t == "tool_result") {
    const auto* c = field(b, "content");
    std::string inner;
    if (!is_null_or_missing(c)) {
      auto r = anthropic_text(*c, param);
      if (!r) {
        return r.error();
      }
      inner = std::move(*r);
    }
    return tool_response_text(inner);
  }
  if (t == "image") {
    return std::string("<|vision_start|><|image_pad|><|vision_end|>");
  }
  if (t == "document") {
    return std::string("[document]");
  }
  // thinking, redacted_thinking and block types newer than this code: not part of the prompt.
  return std::string{};
}

Result<std::string> anthropic_text(const json::value& content, std::string_view param) {
  if (content.is_string()) {
    return std::string(content.as_string());
  }
  if (!content.is_array()) {
    return make_error("'content' must be a string or an array of content blocks", std::string(param));
  }
  std::string text;
  for (const auto& b : content.as_array()) {
    if (!b.is_object()) {
      return make_error("each content block must be an object", std::string(param));
    }
    auto r = anthropic_block(b.as_object(), param);
    if (!r) {
      return r.error();
    }
    if (!r->empty()) {
      join(text, *r);
    }
  }
  return text;
}

// ---- Responses ------------------------------------------------------------------------------------------

Result<std::string> responses_content(const json::value* content, std::string_view param) {
  if (is_null_or_missing(content)) {
    return std::string{};
  }
  if (content->is_string()) {
    return std::string(content->as_string());
  }
  if (!content->is_array()) {
    return make_error("'content' must be a string or an array", std::string(param));
  }
  std::string text;
  for (const auto& part : content->as_array()) {
    if (!part.is_object()) {
      return make_error("each content part must be an object", std::string(param));
    }
    const auto& p = part.as_object();
    const std::string_view type = string_or_empty(p, "type");
    if (type == "input_text" || type == "output_text" || type == "text") {
      join(text, string_or_empty(p, "text"));
    } else if (type == "refusal") {
      join(text, string_or_empty(p, "refusal"));
    } else if (type == "input_image") {
      join(text, "<|vision_start|><|image_pad|><|vision_end|>");
    } else if (type == "input_file") {
      join(text, "[file]");
    } else if (type.empty()) {
      return make_error("each content part needs a string 'type'", std::string(param));
    }
  }
  return text;
}

std::string_view chat_role(std::string_view role) {
  return role == "developer" ? "system" : role;
}

bool valid_role(std::string_view role) {
  return role == "system" || role == "developer" || role == "user" || role == "assistant";
}

// Consecutive function calls are one assistant turn (parallel calls), rendered as one block with the
// calls joined by newlines, as the chat API's assistant message with several tool_calls is.
Result<Tokens> render_responses_items(const json::array& items, Tokens out) {
  std::string calls;  // the pending assistant block of consecutive calls
  auto flush_calls = [&] {
    if (!calls.empty()) {
      add_block(out, "assistant", calls);
      calls.clear();
    }
  };
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string param = "input[" + std::to_string(i) + "]";
    if (!items[i].is_object()) {
      return make_error("each input item must be an object", param);
    }
    const auto& item = items[i].as_object();
    const std::string_view type = string_or_empty(item, "type");
    const auto* role_v = field(item, "role");
    if (type != "function_call" && type != "custom_tool_call") {
      flush_calls();
    }
    if (type == "message" || (type.empty() && role_v != nullptr)) {
      if (role_v == nullptr || !role_v->is_string() || !valid_role(role_v->as_string())) {
        return make_error("message item needs a 'role' of user, assistant, system or developer", param);
      }
      auto text = responses_content(field(item, "content"), param);
      if (!text) {
        return text.error();
      }
      add_block(out, chat_role(role_v->as_string()), *text);
    } else if (type == "function_call" || type == "custom_tool_call") {
      const auto* args = field(item, "arguments");
      if (args == nullptr) {
        args = field(item, "input");
      }
      std::string args_text =
          args == nullptr ? ""
                          : (args->is_string() ? std::string(args->as_string()) : json::serialize(*args));
      join(calls, tool_call_text(string_or_empty(item, "name"), args_text));
      continue;
    } else if (type == "function_call_output" || type == "custom_tool_call_output") {
      const auto* output = field(item, "output");
      std::string text = output == nullptr ? ""
                                           : (output->is_string() ? std::string(output->as_string())
                                                                  : json::serialize(*output));
      add_block(out, "user", tool_response_text(text));
    } else if (type.ends_with("_call")) {
      add_block(out, "assistant", tool_call_text(type, json::serialize(items[i])));
    } else if (type.ends_with("_output")) {
      add_block(out, "user", tool_response_text(json::serialize(items[i])));
    } else if (type.empty()) {
      return make_error("input item needs a 'type' or a 'role'", param);
    }
    // reasoning and other item types carry no prompt text for the model.
  }
  flush_calls();
  return out;
}

Result<Tokens> token_ids(const json::array& arr, std::string_view param) {
  Tokens out;
  out.reserve(arr.size());
  for (const auto& v : arr) {
    std::int64_t id = -1;
    if (v.is_int64()) {
      id = v.as_int64();
    } else if (v.is_uint64() && v.as_uint64() < kVocabSize) {
      id = static_cast<std::int64_t>(v.as_uint64());
    }
    if (id < 0 || id >= static_cast<std::int64_t>(kVocabSize)) {
      return make_error("token ids must be integers in [0, " + std::to_string(kVocabSize) + ")",
                        std::string(param));
    }
    out.push_back(static_cast<TokenId>(id));
  }
  return out;
}

}  // namespace

std::string tool_call_text(std::string_view name, std::string_view arguments_json) {
  std::string s = "<tool_call>\n{\"name\": \"";
  s.append(name);
  s.append("\", \"arguments\": ");
  s.append(arguments_json.empty() ? "{}" : arguments_json);
  s.append("}\n</tool_call>");
  return s;
}

Tokens generation_prompt() {
  Tokens out;
  open_block(out, "assistant");
  return out;
}

Tokens render_message(std::string_view role, std::string_view content) {
  Tokens out;
  add_block(out, role, content);
  return out;
}

Result<Tokens> render_chat(const json::value& body) {
  auto obj = body_object(body);
  if (!obj) {
    return obj.error();
  }
  auto messages = required_array(**obj, "messages");
  if (!messages) {
    return messages.error();
  }
  if ((*messages)->empty()) {
    return make_error("'messages' must not be empty", "messages");
  }
  auto tools = tools_text(field(**obj, "tools"));
  if (!tools) {
    return tools.error();
  }
  Tokens out;
  const auto& msgs = **messages;
  std::size_t first = 0;
  // The first system/developer message carries the tools block; without one, tools get their own.
  {
    const auto* m0 = msgs[0].is_object() ? &msgs[0].as_object() : nullptr;
    const std::string_view role0 = m0 != nullptr ? string_or_empty(*m0, "role") : std::string_view{};
    if (role0 == "system" || role0 == "developer") {
      auto text = openai_content(field(*m0, "content"), "messages[0].content");
      if (!text) {
        return text.error();
      }
      add_system(out, *text, *tools, true);
      first = 1;
    } else {
      add_system(out, "", *tools, false);
    }
  }
  for (std::size_t i = first; i < msgs.size(); ++i) {
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!msgs[i].is_object()) {
      return make_error("each message must be an object", param);
    }
    const auto& m = msgs[i].as_object();
    const auto* role_v = field(m, "role");
    if (role_v == nullptr || !role_v->is_string()) {
      return make_error("each message needs a string 'role'", param + ".role");
    }
    const std::string_view role = role_v->as_string();
    auto text = openai_content(field(m, "content"), param + ".content");
    if (!text) {
      return text.error();
    }
    if (role == "tool" || role == "function") {
      add_block(out, "user", tool_response_text(*text));
    } else if (role == "assistant") {
      auto calls = openai_tool_calls(field(m, "tool_calls"), param + ".tool_calls");
      if (!calls) {
        return calls.error();
      }
      if (!calls->empty()) {
        join(*text, *calls);
      }
      add_block(out, "assistant", *text);
    } else if (valid_role(role)) {
      add_block(out, chat_role(role), *text);
    } else {
      return make_error("unknown role '" + std::string(role) + "'", param + ".role");
    }
  }
  open_block(out, "assistant");
  return out;
}

Result<Tokens> render_anthropic(const json::value& body) {
  auto obj = body_object(body);
  if (!obj) {
    return obj.error();
  }
  auto messages = required_array(**obj, "messages");
  if (!messages) {
    return messages.error();
  }
  if ((*messages)->empty()) {
    return make_error("messages: at least one message is required", "messages");
  }
  auto tools = tools_text(field(**obj, "tools"));
  if (!tools) {
    return tools.error();
  }
  const auto* system = field(**obj, "system");
  std::string system_text;
  if (!is_null_or_missing(system)) {
    auto r = anthropic_text(*system, "system");
    if (!r) {
      return r.error();
    }
    system_text = std::move(*r);
  }
  Tokens out;
  add_system(out, system_text, *tools, !is_null_or_missing(system));
  const auto& msgs = **messages;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const std::string param = "messages." + std::to_string(i);
    if (!msgs[i].is_object()) {
      return make_error(param + ": each message must be an object", param);
    }
    const auto& m = msgs[i].as_object();
    const std::string_view role = string_or_empty(m, "role");
    if (role != "user" && role != "assistant" && role != "system") {
      return make_error(param + ".role: must be 'user' or 'assistant'", param + ".role");
    }
    const auto* content = field(m, "content");
    if (content == nullptr) {
      return make_error(param + ".content: Field required", param + ".content");
    }
    auto text = anthropic_text(*content, param + ".content");
    if (!text) {
      return text.error();
    }
    add_block(out, role, *text);
  }
  open_block(out, "assistant");
  return out;
}

Result<Tokens> render_responses(const json::value& body) {
  auto obj = body_object(body);
  if (!obj) {
    return obj.error();
  }
  const auto* input = field(**obj, "input");
  if (input == nullptr) {
    return make_error("Field required: 'input'", "input");
  }
  if (!input->is_string() && !input->is_array()) {
    return make_error("'input' must be a string or an array of items", "input");
  }
  const auto* instructions = field(**obj, "instructions");
  if (!is_null_or_missing(instructions) && !instructions->is_string()) {
    return make_error("'instructions' must be a string", "instructions");
  }
  auto tools = tools_text(field(**obj, "tools"));
  if (!tools) {
    return tools.error();
  }
  Tokens out;
  const bool has_instructions = !is_null_or_missing(instructions);
  add_system(out, has_instructions ? std::string_view(instructions->as_string()) : std::string_view{}, *tools,
             has_instructions);
  if (input->is_string()) {
    add_block(out, "user", input->as_string());
  } else {
    auto r = render_responses_items(input->as_array(), std::move(out));
    if (!r) {
      return r.error();
    }
    out = std::move(*r);
  }
  open_block(out, "assistant");
  return out;
}

Result<std::vector<Tokens>> render_completions(const json::value& body) {
  auto obj = body_object(body);
  if (!obj) {
    return obj.error();
  }
  const auto* prompt = field(**obj, "prompt");
  if (prompt == nullptr) {
    return make_error("Field required: 'prompt'", "prompt");
  }
  std::vector<Tokens> out;
  if (prompt->is_string()) {
    out.push_back(tokenize(prompt->as_string()));
  } else if (prompt->is_array() && !prompt->as_array().empty()) {
    const auto& arr = prompt->as_array();
    if (arr[0].is_string()) {
      for (const auto& p : arr) {
        if (!p.is_string()) {
          return make_error("'prompt' array must hold only strings, only token ids, or only token-id arrays",
                            "prompt");
        }
        out.push_back(tokenize(p.as_string()));
      }
    } else if (arr[0].is_array()) {
      for (const auto& p : arr) {
        if (!p.is_array()) {
          return make_error("'prompt' array must hold only strings, only token ids, or only token-id arrays",
                            "prompt");
        }
        auto ids = token_ids(p.as_array(), "prompt");
        if (!ids) {
          return ids.error();
        }
        out.push_back(std::move(*ids));
      }
    } else {
      auto ids = token_ids(arr, "prompt");
      if (!ids) {
        return ids.error();
      }
      out.push_back(std::move(*ids));
    }
  } else {
    return make_error("'prompt' must be a string, an array of strings or an array of token ids", "prompt");
  }
  for (const auto& p : out) {
    if (p.empty()) {
      return make_error("The prompt cannot be empty", "prompt");
    }
  }
  return out;
}

Result<Tokens> render_prompt(ApiKind kind, const json::value& body) {
  switch (kind) {
    case ApiKind::chat_completions:
      return render_chat(body);
    case ApiKind::anthropic_messages:
      return render_anthropic(body);
    case ApiKind::responses:
      return render_responses(body);
    case ApiKind::completions: {
      auto prompts = render_completions(body);
      if (!prompts) {
        return prompts.error();
      }
      if (prompts->size() != 1) {
        return make_error(
            "only one prompt per request is supported (got " + std::to_string(prompts->size()) + ")",
            "prompt");
      }
      return std::move(prompts->front());
    }
  }
  return make_error("unknown API kind");
}

Result<Tokens> render_prompt(ApiKind kind, std::string_view body_text) {
  boost::system::error_code ec;
  json::parse_options opt;
  opt.max_depth = 256;  // tool schemas nest deeper than the default 32
  json::value body = json::parse(body_text, ec, {}, opt);
  if (ec) {
    return make_error("malformed JSON body: " + ec.message());
  }
  return render_prompt(kind, body);
}

}  // namespace warden::engine
