#include "protocol/usage.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cmath>

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

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
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
  return Usage{f.prompt.value_or(0), f.cached, f.completion.value_or(0)};
}

StreamEventInfo inspect_stream_event(ApiKind api, std::string_view event_name, std::string_view data) {
  StreamEventInfo info;
  data = trim(data);
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
      event_name != "error") {
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
  return info;
}

std::optional<Usage> StreamUsageTracker::usage() const {
  if (!prompt_ && !completion_) {
    return std::nullopt;
  }
  return Usage{prompt_.value_or(0), cached_, completion_.value_or(0)};
}

}  // namespace warden::protocol
