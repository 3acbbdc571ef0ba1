#include "protocol/usage.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cmath>

#include "base/trim.hpp"

namespace warden::protocol {

namespace {

namespace json = boost::json;

struct UsageFields {
  std::optional<std::int64_t> prompt;
  std::optional<std::int64_t> cached;
  std::optional<std::int64_t> completion;
  bool any() const noexcept { return prompt || cached || completion; }
};

// A non-negative token count, from an integer or an integral double; anything else is "not given".
std::optional<std::int64_t> count_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) {
    return std::nullopt;
  }
  if (v->is_int64() && v->get_int64() >= 0) {
    return v->get_int64();
  }
  if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return static_cast<std::int64_t>(v->get_uint64());
  }
  if (v->is_double()) {
    const double d = v->get_double();
    if (std::isfinite(d) && d >= 0 && d < 9.0e18 && std::floor(d) == d) {
      return static_cast<std::int64_t>(d);
    }
  }
  return std::nullopt;
}

const json::object* object_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return (v != nullptr && v->is_object()) ? &v->get_object() : nullptr;
}

std::string_view string_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return (v != nullptr && v->is_string()) ? std::string_view(v->get_string()) : std::string_view{};
}

// Normalises one "usage" object; `anthropic` selects the Anthropic meaning of input_tokens.
UsageFields read_usage(const json::object& u, bool anthropic) {
  UsageFields f;
  if (anthropic) {
    const auto input = count_of(u, "input_tokens");
    const auto read = count_of(u, "cache_read_input_tokens");
    const auto created = count_of(u, "cache_creation_input_tokens");
    if (input) {
      f.prompt = *input + read.value_or(0) + created.value_or(0);
    }
    f.cached = read;
    f.completion = count_of(u, "output_tokens");
    return f;
  }
  if (u.contains("prompt_tokens") || u.contains("completion_tokens")) {  // chat / completions
    f.prompt = count_of(u, "prompt_tokens");
    f.completion = count_of(u, "completion_tokens");
    if (const auto* d = object_at(u, "prompt_tokens_details")) {
      f.cached = count_of(*d, "cached_tokens");
    }
    return f;
  }
  f.prompt = count_of(u, "input_tokens");  // Responses API: input_tokens is the whole prompt
  f.completion = count_of(u, "output_tokens");
  if (const auto* d = object_at(u, "input_tokens_details")) {
    f.cached = count_of(*d, "cached_tokens");
  }
  return f;
}

bool non_empty_string(const json::object& o, std::string_view key) {
  return !string_at(o, key).empty();
}

// OpenAI chat / completions chunk: any choice with generated text, reasoning or tool calls.
bool openai_has_content(const json::array& choices) {
  for (const auto& c : choices) {
    if (!c.is_object()) {
      continue;
    }
    const json::object& choice = c.get_object();
    if (non_empty_string(choice, "text")) {
      return true;
    }
    if (const auto* delta = object_at(choice, "delta")) {
      if (non_empty_string(*delta, "content") || non_empty_string(*delta, "reasoning_content") ||
          non_empty_string(*delta, "reasoning")) {
        return true;
      }
      if (const auto* tc = delta->if_contains("tool_calls");
          tc != nullptr && tc->is_array() && !tc->get_array().empty()) {
        return true;
      }
    }
  }
  return false;
}

// The end a stop or finish reason names (Anthropic stop_reason, OpenAI finish_reason); nullopt for none.
std::optional<ReplyEnd> end_named(std::string_view reason) {
  if (reason.empty()) {
    return std::nullopt;
  }
  const bool tools = reason == "tool_use" || reason == "tool_calls" || reason == "function_call";
  return tools ? ReplyEnd::tool_calls : ReplyEnd::text;
}

// OpenAI chat / completions: the choices' finish reasons; tool calls win over text in any choice.
std::optional<ReplyEnd> openai_end(const json::array& choices) {
  std::optional<ReplyEnd> end;
  for (const auto& c : choices) {
    if (c.is_object()) {
      if (const auto e = end_named(string_at(c.get_object(), "finish_reason"))) {
        end = end == ReplyEnd::tool_calls ? end : e;
      }
    }
  }
  return end;
}

// Responses API: a response's output items; a "*_call" item (function_call, custom_tool_call, ...) asks
// the client to run a tool. No output array: the response does not say.
std::optional<ReplyEnd> responses_end(const json::object& response) {
  const json::value* output = response.if_contains("output");
  if (output == nullptr || !output->is_array()) {
    return std::nullopt;
  }
  for (const auto& item : output->get_array()) {
    if (item.is_object() && string_at(item.get_object(), "type").ends_with("_call")) {
      return ReplyEnd::tool_calls;
    }
  }
  return ReplyEnd::text;
}

// How a whole (non-streaming) reply body ended.
std::optional<ReplyEnd> body_end(ApiKind api, const json::object& o) {
  if (is_anthropic(api)) {
    return end_named(string_at(o, "stop_reason"));
  }
  if (api == ApiKind::openai_responses) {
    return responses_end(o);
  }
  const json::value* choices = o.if_contains("choices");
  return choices != nullptr && choices->is_array() ? openai_end(choices->get_array()) : std::nullopt;
}

// Whether SSE data names a finish_reason that is not null (OpenAI's last chunk of a choice), from a scan of
// the text: every chunk carries "finish_reason":null until then.
bool names_a_finish(std::string_view data) {
  constexpr std::string_view key = "\"finish_reason\"";
  for (auto at = data.find(key); at != std::string_view::npos; at = data.find(key, at + key.size())) {
    const auto value = base::trim(data.substr(at + key.size()), " \t:");
    if (value.starts_with('"')) {
      return true;
    }
  }
  return false;
}

void copy_fields(StreamEventInfo& info, const UsageFields& f) {
  info.prompt_tokens = f.prompt;
  info.cached_tokens = f.cached;
  info.completion_tokens = f.completion;
}

}  // namespace

Result<Usage> parse_usage_body(ApiKind api, std::string_view body) {
  json::monotonic_resource mr;
  boost::system::error_code ec;
  const json::value jv = json::parse(json::string_view(body.data(), body.size()), ec, &mr);
  if (ec || !jv.is_object()) {
    return Errc::not_json_object;
  }
  const json::object* u = object_at(jv.get_object(), "usage");
  if (u == nullptr) {
    return Errc::no_usage;
  }
  const UsageFields f = read_usage(*u, is_anthropic(api));
  if (!f.prompt && !f.completion) {
    return Errc::no_usage;
  }
  return Usage{f.prompt.value_or(0), f.cached, f.completion.value_or(0), body_end(api, jv.get_object())};
}

StreamEventInfo inspect_stream_event(ApiKind api, std::string_view event_name, std::string_view data) {
  StreamEventInfo info;
  data = base::trim(data, " \t\r\n");
  if (data == "[DONE]") {
    info.done = true;
    return info;
  }
  unsigned char buffer[4096];
  json::monotonic_resource mr(buffer, sizeof buffer);
  boost::system::error_code ec;
  const json::value jv = json::parse(json::string_view(data.data(), data.size()), ec, &mr);
  if (ec || !jv.is_object()) {
    return info;
  }
  info.json_ok = true;
  const json::object& o = jv.get_object();
  std::string_view type = string_at(o, "type");
  if (type.empty()) {
    type = event_name;
  }
  if (o.contains("error") || type == "error" || type == "response.failed") {
    info.error = true;
  }

  if (is_anthropic(api)) {
    if (type == "content_block_delta") {
      info.content = true;
    } else if (type == "message_start") {
      if (const auto* m = object_at(o, "message")) {
        if (const auto* u = object_at(*m, "usage")) {
          copy_fields(info, read_usage(*u, true));
        }
      }
    } else if (type == "message_delta") {
      if (const auto* u = object_at(o, "usage")) {
        copy_fields(info, read_usage(*u, true));
      }
      if (const auto* d = object_at(o, "delta")) {
        info.end = end_named(string_at(*d, "stop_reason"));
      }
    }
    return info;
  }

  if (api == ApiKind::openai_responses) {
    if (type.starts_with("response.") && type.ends_with(".delta")) {
      info.content = true;
    }
    const json::object* usage = nullptr;
    if (const auto* r = object_at(o, "response")) {
      usage = object_at(*r, "usage");
      if (type == "response.completed" || type == "response.incomplete") {
        info.end = responses_end(*r);
      }
    } else {
      usage = object_at(o, "usage");
    }
    if (usage != nullptr) {
      copy_fields(info, read_usage(*usage, false));
    }
    return info;
  }

  // OpenAI chat / completions chunk.
  const json::value* choices = o.if_contains("choices");
  const json::object* usage = object_at(o, "usage");
  if (choices != nullptr && choices->is_array()) {
    info.content = openai_has_content(choices->get_array());
    info.usage_only = usage != nullptr && choices->get_array().empty();
    info.end = openai_end(choices->get_array());
  }
  if (usage != nullptr) {
    copy_fields(info, read_usage(*usage, false));
  }
  return info;
}

StreamEventInfo StreamUsageTracker::on_event(std::string_view event_name, std::string_view data) {
  // Once content has been seen only usage, errors and the end marker matter: skip the JSON parse of the
  // (many) plain content chunks.
  if (mode_ == Mode::fast && saw_content_ && data.find("usage") == std::string_view::npos &&
      data.find("error") == std::string_view::npos && data.find("[DONE]") == std::string_view::npos &&
      event_name != "error" && !names_a_finish(data)) {
    StreamEventInfo skipped;
    skipped.skipped = true;
    return skipped;
  }
  StreamEventInfo info = inspect_stream_event(api_, event_name, data);
  saw_content_ = saw_content_ || info.content;
  saw_done_ = saw_done_ || info.done;
  saw_error_ = saw_error_ || info.error;
  if (info.prompt_tokens) {
    prompt_ = info.prompt_tokens;
  }
  if (info.cached_tokens) {
    cached_ = info.cached_tokens;
  }
  if (info.completion_tokens) {
    completion_ = info.completion_tokens;
  }
  if (info.end) {
    end_ = end_ == ReplyEnd::tool_calls ? end_ : info.end;
  }
  return info;
}

std::optional<Usage> StreamUsageTracker::usage() const {
  if (!prompt_ && !completion_) {
    return std::nullopt;
  }
  return Usage{prompt_.value_or(0), cached_, completion_.value_or(0), end_};
}

namespace {

// The top-level look behind openai_usage_only(): offsets only, every step bounds-checked.
class TopLevel {
 public:
  explicit TopLevel(std::string_view s) : s_(s) {}

  std::size_t ws(std::size_t p) const noexcept {
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\n' || s_[p] == '\r')) {
      ++p;
    }
    return p;
  }
  // p at an opening quote: past the closing one, or npos. `escaped` tells whether a backslash occurred.
  std::size_t string_end(std::size_t p, bool& escaped) const noexcept {
    escaped = false;
    for (++p; p < s_.size(); ++p) {
      if (s_[p] == '\\') {
        escaped = true;
        ++p;
      } else if (s_[p] == '"') {
        return p + 1;
      }
    }
    return npos;
  }
  // p at a value: past it, or npos (containers by bracket depth, strings skipped whole).
  std::size_t value_end(std::size_t p) const noexcept {
    if (p >= s_.size()) {
      return npos;
    }
    bool escaped = false;
    if (s_[p] == '"') {
      return string_end(p, escaped);
    }
    if (s_[p] == '{' || s_[p] == '[') {
      std::size_t depth = 0;
      while (p < s_.size()) {
        const char c = s_[p];
        if (c == '"') {
          p = string_end(p, escaped);
          if (p == npos) {
            return npos;
          }
          continue;
        }
        if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (--depth == 0) {
            return p + 1;
          }
        }
        ++p;
      }
      return npos;
    }
    std::size_t q = p;
    while (q < s_.size() && s_[q] != ',' && s_[q] != '}' && s_[q] != ']' && s_[q] != ' ' && s_[q] != '\t' &&
           s_[q] != '\n' && s_[q] != '\r') {
      ++q;
    }
    return q == p ? npos : q;
  }
  char at(std::size_t p) const noexcept { return p < s_.size() ? s_[p] : '\0'; }
  std::string_view slice(std::size_t b, std::size_t e) const noexcept { return s_.substr(b, e - b); }
  std::size_t size() const noexcept { return s_.size(); }

  static constexpr std::size_t npos = std::string_view::npos;

 private:
  std::string_view s_;
};

}  // namespace

std::optional<bool> openai_usage_only(std::string_view data) {
  const TopLevel t(data);
  std::size_t p = t.ws(0);
  if (t.at(p) != '{') {
    return std::nullopt;
  }
  int choices = 0;
  int usage = 0;
  bool choices_empty = false;
  bool usage_object = false;
  p = t.ws(p + 1);
  if (t.at(p) == '}') {
    return t.ws(p + 1) == t.size() ? std::optional<bool>(false) : std::nullopt;
  }
  while (true) {
    if (t.at(p) != '"') {
      return std::nullopt;
    }
    bool escaped = false;
    const std::size_t key_end = t.string_end(p, escaped);
    if (key_end == TopLevel::npos || escaped) {
      return std::nullopt;  // an escaped spelling could be one of the keys: leave it to the full parse
    }
    const std::string_view key = t.slice(p + 1, key_end - 1);
    p = t.ws(key_end);
    if (t.at(p) != ':') {
      return std::nullopt;
    }
    const std::size_t value = t.ws(p + 1);
    const std::size_t end = t.value_end(value);
    if (end == TopLevel::npos) {
      return std::nullopt;
    }
    if (key == "choices") {
      ++choices;
      choices_empty = t.at(value) == '[' && t.ws(value + 1) == end - 1;
    } else if (key == "usage") {
      ++usage;
      usage_object = t.at(value) == '{';
    }
    p = t.ws(end);
    if (t.at(p) == ',') {
      p = t.ws(p + 1);
      continue;
    }
    if (t.at(p) != '}' || t.ws(p + 1) != t.size()) {
      return std::nullopt;
    }
    break;
  }
  if (choices > 1 || usage > 1) {
    return std::nullopt;
  }
  return choices == 1 && choices_empty && usage == 1 && usage_object;
}

std::optional<std::vector<std::pair<std::size_t, std::size_t>>> locate_usage_only_events(
    std::string_view events) {
  if (events.find('\r') != std::string_view::npos) {
    return std::nullopt;
  }
  std::vector<std::pair<std::size_t, std::size_t>> found;
  std::size_t pos = 0;
  while (pos < events.size()) {
    const std::size_t blank = events.find("\n\n", pos);
    if (blank == std::string_view::npos) {
      return std::nullopt;  // an event without its end
    }
    const std::string_view body = events.substr(pos, blank - pos);
    if (body.find("usage") != std::string_view::npos) {
      if (!body.starts_with("data:") || body.find('\n') != std::string_view::npos) {
        return std::nullopt;
      }
      std::string_view data = body.substr(5);
      if (data.starts_with(' ')) {
        data.remove_prefix(1);
      }
      const std::optional<bool> usage_only = openai_usage_only(data);
      if (!usage_only) {
        return std::nullopt;
      }
      if (*usage_only) {
        found.emplace_back(pos, blank + 2);
      }
    }
    pos = blank + 2;
  }
  return found;
}

}  // namespace warden::protocol
