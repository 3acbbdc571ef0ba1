#include "protocol/task_start.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace warden::protocol {

namespace json = boost::json;

namespace {

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

bool starts_task(ApiKind api, std::string_view body) {
  boost::system::error_code ec;
  const json::value doc = json::parse(body, ec);
  if (ec || !doc.is_object()) {
    return false;
  }
  const bool responses = api == ApiKind::openai_responses;
  const json::value* history = doc.as_object().if_contains(responses ? "input" : "messages");
  if (history != nullptr && responses && history->is_string()) {
    return true;
  }
  if (history == nullptr || !history->is_array() || history->as_array().empty()) {
    return false;
  }
  return users_own_words(history->as_array().back());
}

}  // namespace warden::protocol
