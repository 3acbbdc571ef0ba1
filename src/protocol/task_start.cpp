#include "protocol/task_start.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace warden::protocol {

namespace json = boost::json;

namespace {

constexpr std::size_t kInputPart =
    4;  // BodyLayout::start_parts: system, tools, instructions, messages, input

std::string_view string_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->as_string()) : std::string_view{};
}

// A chat message (Anthropic or OpenAI) or a Responses message item: the user's, with no tool result in it.
bool users_own_words(const json::value& message) {
  if (!message.is_object() || string_at(message.as_object(), "role") != "user") {
    return false;
  }
  const json::value* content = message.as_object().if_contains("content");
  if (content == nullptr || !content->is_array()) {
    return true;
  }
  for (const json::value& block : content->as_array()) {
    if (block.is_object() && string_at(block.as_object(), "type") == "tool_result") {
      return false;
    }
  }
  return true;
}

}  // namespace

bool starts_task(ApiKind api, std::string_view body, const BodyLayout& layout) {
  const bool responses = api == ApiKind::openai_responses;
  if (responses) {
    // A string "input" is the user's words; the layout keeps it as the input part of the prompt's start.
    const std::optional<ByteSpan>& input = layout.start_parts[kInputPart];
    if (input && !layout.last_input_item && input->begin < body.size() && body[input->begin] == '"') {
      return true;
    }
  }
  const std::optional<ByteSpan>& last = responses ? layout.last_input_item : layout.last_message;
  if (!last || last->end > body.size() || last->begin >= last->end) {
    return false;
  }
  boost::system::error_code ec;
  const json::value message = json::parse(body.substr(last->begin, last->end - last->begin), ec);
  return !ec && users_own_words(message);
}

}  // namespace warden::protocol
