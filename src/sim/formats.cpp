#include "sim/formats.hpp"

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <utility>

namespace warden::sim {

namespace json = boost::json;

namespace {

json::object openai_usage(const UsageOut& u) {
  return json::object{{"prompt_tokens", u.prompt_tokens},
                      {"total_tokens", u.prompt_tokens + u.completion_tokens},
                      {"completion_tokens", u.completion_tokens},
                      {"prompt_tokens_details", json::object{{"cached_tokens", u.cached_tokens}}}};
}

json::object anthropic_usage(const UsageOut& u, bool with_output) {
  json::object o{{"input_tokens", u.prompt_tokens - u.cached_tokens},
                 {"cache_creation_input_tokens", 0},
                 {"cache_read_input_tokens", u.cached_tokens}};
  o["output_tokens"] = with_output ? u.completion_tokens : 0;
  return o;
}

json::object responses_usage(const UsageOut& u) {
  return json::object{{"input_tokens", u.prompt_tokens},
                      {"input_tokens_details", json::object{{"cached_tokens", u.cached_tokens}}},
                      {"output_tokens", u.completion_tokens},
                      {"output_tokens_details", json::object{{"reasoning_tokens", 0}}},
                      {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

std::string finish_reason(const UsageOut& u, bool tools = false) {
  return u.length ? "length" : (tools ? "tool_calls" : "stop");
}

std::string_view stop_reason(const UsageOut& u, bool tools = false) {
  return u.length ? "max_tokens" : (tools ? "tool_use" : "end_turn");
}

// ---- tool calls ----------------------------------------------------------------------------------------

// Characters of call `i`'s arguments out once `tokens` tokens of the reply are: in proportion to the
// call's own tokens.
std::size_t args_sent(const engine::ToolReply& r, std::size_t i, std::uint32_t tokens) {
  const std::uint32_t begin = i == 0 ? 0 : r.ends[i - 1];
  const std::uint32_t end = r.ends[i];
  const std::size_t size = r.calls[i].arguments.size();
  if (tokens >= end) {
    return size;
  }
  return tokens <= begin ? 0 : size * (tokens - begin) / (end - begin);
}

// Calls whose first token is out after `tokens` tokens.
std::size_t calls_started(const engine::ToolReply& r, std::uint32_t tokens) {
  std::size_t n = 0;
  while (n < r.calls.size() && (n == 0 ? 0 : r.ends[n - 1]) < tokens) {
    ++n;
  }
  return n;
}

// An Anthropic tool_use block's input: the arguments as an object ({} while they are cut short).
json::value tool_input(std::string_view args) {
  boost::system::error_code ec;
  json::value v = json::parse(args, ec);
  return !ec && v.is_object() ? v : json::value(json::object{});
}

json::object tool_use_block(const engine::ToolCall& c, std::string_view args) {
  return json::object{
      {"type", "tool_use"}, {"id", "toolu_" + c.id}, {"name", c.name}, {"input", tool_input(args)}};
}

json::object chat_tool_call(std::size_t index, const engine::ToolCall& c, std::string_view args) {
  return json::object{{"index", index},
                      {"id", "call_" + c.id},
                      {"type", "function"},
                      {"function", json::object{{"name", c.name}, {"arguments", args}}}};
}

json::object function_call_item(const engine::ToolCall& c, std::string_view args, std::string_view status) {
  return json::object{{"id", "fc_" + c.id}, {"type", "function_call"},   {"status", status},
                      {"arguments", args},  {"call_id", "call_" + c.id}, {"name", c.name}};
}

// The calls of a reply as far as `tokens` tokens carried them, built by `make`.
template <class Make>
json::array calls_upto(const engine::ToolReply& r, std::uint32_t tokens, Make make) {
  json::array out;
  for (std::size_t i = 0; i < calls_started(r, tokens); ++i) {
    out.push_back(
        make(i, r.calls[i], std::string_view(r.calls[i].arguments).substr(0, args_sent(r, i, tokens))));
  }
  return out;
}

// A Responses reply cut by max_output_tokens (or the context) is "incomplete", as OpenAI's API says.
std::string_view response_status(const UsageOut& u) {
  return u.length ? "incomplete" : "completed";
}

json::object message_item(const ReplyMeta& meta, std::string_view text, std::string_view status) {
  json::array content;
  if (status != "in_progress") {
    content.push_back(json::object{{"type", "output_text"},
                                   {"text", text},
                                   {"annotations", json::array{}},
                                   {"logprobs", json::array{}}});
  }
  return json::object{{"id", "msg_" + meta.id.substr(meta.id.find('_') + 1)},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"status", status},
                      {"content", std::move(content)}};
}

json::object response_object(const ReplyMeta& meta, std::string_view status, json::array output,
                             const UsageOut* usage) {
  json::object r{{"id", meta.id},
                 {"object", "response"},
                 {"created_at", meta.created},
                 {"model", meta.model},
                 {"status", status},
                 {"output", std::move(output)},
                 {"parallel_tool_calls", true},
                 {"tool_choice", "auto"},
                 {"tools", json::array{}},
                 {"error", nullptr}};
  r["incomplete_details"] = status == "incomplete"
                                ? json::value(json::object{{"reason", "max_output_tokens"}})
                                : json::value(nullptr);
  r["usage"] = usage ? json::value(responses_usage(*usage)) : json::value(nullptr);
  return r;
}

json::object chat_chunk(const ReplyMeta& meta, json::object choice) {
  return json::object{{"id", meta.id},
                      {"object", "chat.completion.chunk"},
                      {"created", meta.created},
                      {"model", meta.model},
                      {"choices", json::array{std::move(choice)}}};
}

}  // namespace

std::string make_id(Api api, std::uint64_t hi, std::uint64_t lo) {
  std::string_view prefix = api == Api::chat          ? "chatcmpl-"
                            : api == Api::completions ? "cmpl-"
                            : api == Api::responses   ? "resp_"
                                                      : "msg_";
  return fmt::format("{}{:016x}{:016x}", prefix, hi, lo);
}

std::string full_body(Api api, const ReplyMeta& meta, std::string_view text, const UsageOut& usage,
                      const engine::ToolReply& tools) {
  const bool calls = !tools.calls.empty() && api != Api::completions;
  const std::uint32_t tokens = usage.completion_tokens;
  switch (api) {
    case Api::chat: {
      json::object message{
          {"role", "assistant"},
          {"content", calls ? json::value(nullptr) : json::value(text)},
          {"refusal", nullptr},
          {"annotations", nullptr},
          {"audio", nullptr},
          {"function_call", nullptr},
          {"tool_calls", calls_upto(tools, tokens,
                                    [](std::size_t i, const engine::ToolCall& c, std::string_view args) {
                                      json::object o = chat_tool_call(i, c, args);
                                      o.erase("index");
                                      return o;
                                    })},
          {"reasoning_content", nullptr}};
      json::object choice{{"index", 0},
                          {"message", std::move(message)},
                          {"logprobs", nullptr},
                          {"finish_reason", finish_reason(usage, calls)},
                          {"stop_reason", nullptr}};
      return json::serialize(json::object{{"id", meta.id},
                                          {"object", "chat.completion"},
                                          {"created", meta.created},
                                          {"model", meta.model},
                                          {"choices", json::array{std::move(choice)}},
                                          {"service_tier", nullptr},
                                          {"system_fingerprint", nullptr},
                                          {"usage", openai_usage(usage)},
                                          {"prompt_logprobs", nullptr},
                                          {"kv_transfer_params", nullptr}});
    }
    case Api::completions: {
      json::object choice{{"index", 0},
                          {"text", text},
                          {"logprobs", nullptr},
                          {"finish_reason", finish_reason(usage)},
                          {"stop_reason", nullptr},
                          {"prompt_logprobs", nullptr}};
      return json::serialize(json::object{{"id", meta.id},
                                          {"object", "text_completion"},
                                          {"created", meta.created},
                                          {"model", meta.model},
                                          {"choices", json::array{std::move(choice)}},
                                          {"service_tier", nullptr},
                                          {"system_fingerprint", nullptr},
                                          {"usage", openai_usage(usage)},
                                          {"kv_transfer_params", nullptr}});
    }
    case Api::responses: {
      const std::string_view status = response_status(usage);
      json::array output =
          calls ? calls_upto(tools, tokens,
                             [&](std::size_t, const engine::ToolCall& c, std::string_view args) {
                               return function_call_item(c, args, status);
                             })
                : json::array{message_item(meta, text, status)};
      return json::serialize(response_object(meta, status, std::move(output), &usage));
    }
    case Api::messages: {
      json::array content = calls ? calls_upto(tools, tokens,
                                               [](std::size_t, const engine::ToolCall& c,
                                                  std::string_view args) { return tool_use_block(c, args); })
                                  : json::array{json::object{{"type", "text"}, {"text", text}}};
      return json::serialize(json::object{{"id", meta.id},
                                          {"type", "message"},
                                          {"role", "assistant"},
                                          {"model", meta.model},
                                          {"content", std::move(content)},
                                          {"stop_reason", stop_reason(usage, calls)},
                                          {"stop_sequence", nullptr},
                                          {"usage", anthropic_usage(usage, true)}});
    }
  }
  return "{}";
}

std::string StreamEncoder::event(std::string_view type, std::string json_text) {
  std::string out;
  if (!type.empty()) {
    out += "event: ";
    out += type;
    out += '\n';
  }
  out += "data: ";
  out += json_text;
  out += "\n\n";
  return out;
}

std::string StreamEncoder::start(const UsageOut& usage) {
  switch (api_) {
    case Api::chat: {
      json::object choice{{"index", 0},
                          {"delta", json::object{{"role", "assistant"}, {"content", ""}}},
                          {"logprobs", nullptr},
                          {"finish_reason", nullptr}};
      return event({}, json::serialize(chat_chunk(meta_, std::move(choice))));
    }
    case Api::completions:
      return {};
    case Api::messages: {
      json::object message{{"id", meta_.id},           {"type", "message"},
                           {"role", "assistant"},      {"model", meta_.model},
                           {"content", json::array{}}, {"stop_reason", nullptr},
                           {"stop_sequence", nullptr}, {"usage", anthropic_usage(usage, false)}};
      std::string out = event("message_start",
                              json::serialize(json::object{{"type", "message_start"}, {"message", message}}));
      if (!tools_.calls.empty()) {
        return out;  // each call opens its own block as its tokens come
      }
      out += event(
          "content_block_start",
          json::serialize(json::object{{"type", "content_block_start"},
                                       {"index", 0},
                                       {"content_block", json::object{{"type", "text"}, {"text", ""}}}}));
      return out;
    }
    case Api::responses: {
      auto seq = [this] { return sequence_++; };
      std::string out;
      json::object created = response_object(meta_, "in_progress", json::array{}, nullptr);
      out += event("response.created",
                   json::serialize(json::object{
                       {"type", "response.created"}, {"sequence_number", seq()}, {"response", created}}));
      out += event("response.in_progress",
                   json::serialize(json::object{
                       {"type", "response.in_progress"}, {"sequence_number", seq()}, {"response", created}}));
      if (!tools_.calls.empty()) {
        return out;  // each call is an output item of its own, added as its tokens come
      }
      out += event("response.output_item.added",
                   json::serialize(json::object{{"type", "response.output_item.added"},
                                                {"sequence_number", seq()},
                                                {"output_index", 0},
                                                {"item", message_item(meta_, "", "in_progress")}}));
      out +=
          event("response.content_part.added",
                json::serialize(json::object{
                    {"type", "response.content_part.added"},
                    {"sequence_number", seq()},
                    {"item_id", "msg_" + meta_.id.substr(5)},
                    {"output_index", 0},
                    {"content_index", 0},
                    {"part",
                     json::object{{"type", "output_text"}, {"text", ""}, {"annotations", json::array{}}}}}));
      return out;
    }
  }
  return {};
}

std::string StreamEncoder::token(std::string_view text, bool last, const UsageOut& usage) {
  if (!tools_.calls.empty() && api_ != Api::completions) {
    return tool_token(last, usage);
  }
  text_ += text;
  switch (api_) {
    case Api::chat: {
      json::object choice{{"index", 0}, {"delta", json::object{{"content", text}}}, {"logprobs", nullptr}};
      choice["finish_reason"] = last ? json::value(finish_reason(usage)) : json::value(nullptr);
      if (last) {
        choice["stop_reason"] = nullptr;
      }
      return event({}, json::serialize(chat_chunk(meta_, std::move(choice))));
    }
    case Api::completions: {
      json::object choice{{"index", 0}, {"text", text}, {"logprobs", nullptr}};
      choice["finish_reason"] = last ? json::value(finish_reason(usage)) : json::value(nullptr);
      choice["stop_reason"] = nullptr;
      return event({}, json::serialize(json::object{{"id", meta_.id},
                                                    {"object", "text_completion"},
                                                    {"created", meta_.created},
                                                    {"model", meta_.model},
                                                    {"choices", json::array{std::move(choice)}}}));
    }
    case Api::messages:
      return event(
          "content_block_delta",
          json::serialize(json::object{{"type", "content_block_delta"},
                                       {"index", 0},
                                       {"delta", json::object{{"type", "text_delta"}, {"text", text}}}}));
    case Api::responses:
      return event("response.output_text.delta",
                   json::serialize(json::object{{"type", "response.output_text.delta"},
                                                {"sequence_number", sequence_++},
                                                {"item_id", "msg_" + meta_.id.substr(5)},
                                                {"output_index", 0},
                                                {"content_index", 0},
                                                {"delta", text},
                                                {"logprobs", json::array{}}}));
  }
  return {};
}

std::string StreamEncoder::finish(const UsageOut& usage) {
  constexpr std::string_view done = "data: [DONE]\n\n";
  switch (api_) {
    case Api::chat:
    case Api::completions: {
      std::string out;
      if (meta_.include_usage) {
        out += event({}, json::serialize(json::object{
                             {"id", meta_.id},
                             {"object", api_ == Api::chat ? "chat.completion.chunk" : "text_completion"},
                             {"created", meta_.created},
                             {"model", meta_.model},
                             {"choices", json::array{}},
                             {"usage", openai_usage(usage)}}));
      }
      out += done;
      return out;
    }
    case Api::messages: {
      const bool calls = !tools_.calls.empty();
      std::string out =
          calls ? close_call()
                : event("content_block_stop",
                        json::serialize(json::object{{"type", "content_block_stop"}, {"index", 0}}));
      out += event(
          "message_delta",
          json::serialize(json::object{
              {"type", "message_delta"},
              {"delta", json::object{{"stop_reason", stop_reason(usage, calls)}, {"stop_sequence", nullptr}}},
              {"usage", anthropic_usage(usage, true)}}));
      out += event("message_stop", json::serialize(json::object{{"type", "message_stop"}}));
      out += done;
      return out;
    }
    case Api::responses: {
      if (!tools_.calls.empty()) {
        return close_call() + responses_end(usage);
      }
      std::string item_id = "msg_" + meta_.id.substr(5);
      std::string out;
      out += event("response.output_text.done",
                   json::serialize(json::object{{"type", "response.output_text.done"},
                                                {"sequence_number", sequence_++},
                                                {"item_id", item_id},
                                                {"output_index", 0},
                                                {"content_index", 0},
                                                {"text", text_},
                                                {"logprobs", json::array{}}}));
      out += event("response.content_part.done",
                   json::serialize(json::object{{"type", "response.content_part.done"},
                                                {"sequence_number", sequence_++},
                                                {"item_id", item_id},
                                                {"output_index", 0},
                                                {"content_index", 0},
                                                {"part", json::object{{"type", "output_text"},
                                                                      {"text", text_},
                                                                      {"annotations", json::array{}}}}}));
      out +=
          event("response.output_item.done",
                json::serialize(json::object{{"type", "response.output_item.done"},
                                             {"sequence_number", sequence_++},
                                             {"output_index", 0},
                                             {"item", message_item(meta_, text_, response_status(usage))}}));
      return out + responses_end(usage);
    }
  }
  return std::string(done);
}

// The closing event is response.incomplete for a capped reply (OpenAI's stream events).
std::string StreamEncoder::responses_end(const UsageOut& usage) {
  const std::string_view status = response_status(usage);
  const std::string type = fmt::format("response.{}", status);
  json::array output =
      tools_.calls.empty()
          ? json::array{message_item(meta_, text_, status)}
          : calls_upto(tools_, tokens_, [&](std::size_t, const engine::ToolCall& c, std::string_view args) {
              return function_call_item(c, args, status);
            });
  return event(type, json::serialize(json::object{
                         {"type", type},
                         {"sequence_number", sequence_++},
                         {"response", response_object(meta_, status, std::move(output), &usage)}}));
}

std::string StreamEncoder::tool_token(bool last, const UsageOut& usage) {
  ++tokens_;
  std::string out;
  const std::size_t i = calls_started(tools_, tokens_) - 1;  // the call this token belongs to
  if (open_ != i) {
    out += close_call();
    out += open_call(i);
  }
  const std::size_t target = args_sent(tools_, i, tokens_);
  if (target > sent_) {
    out += call_delta(i, std::string_view(tools_.calls[i].arguments).substr(sent_, target - sent_));
    sent_ = target;
  }
  if (last && api_ == Api::chat) {
    json::object choice{{"index", 0},
                        {"delta", json::object{}},
                        {"logprobs", nullptr},
                        {"finish_reason", finish_reason(usage, true)},
                        {"stop_reason", nullptr}};
    out += event({}, json::serialize(chat_chunk(meta_, std::move(choice))));
  }
  return out;
}

std::string StreamEncoder::open_call(std::size_t index) {
  open_ = index;
  sent_ = 0;
  const engine::ToolCall& c = tools_.calls[index];
  switch (api_) {
    case Api::chat: {
      json::object choice{{"index", 0},
                          {"delta", json::object{{"tool_calls", json::array{chat_tool_call(index, c, "")}}}},
                          {"logprobs", nullptr},
                          {"finish_reason", nullptr}};
      return event({}, json::serialize(chat_chunk(meta_, std::move(choice))));
    }
    case Api::messages: {
      json::object block{
          {"type", "tool_use"}, {"id", "toolu_" + c.id}, {"name", c.name}, {"input", json::object{}}};
      return event("content_block_start", json::serialize(json::object{{"type", "content_block_start"},
                                                                       {"index", index},
                                                                       {"content_block", std::move(block)}}));
    }
    case Api::responses:
      return event("response.output_item.added",
                   json::serialize(json::object{{"type", "response.output_item.added"},
                                                {"sequence_number", sequence_++},
                                                {"output_index", index},
                                                {"item", function_call_item(c, "", "in_progress")}}));
    case Api::completions:
      break;
  }
  return {};
}

std::string StreamEncoder::call_delta(std::size_t index, std::string_view part) {
  switch (api_) {
    case Api::chat: {
      json::object call{{"index", index}, {"function", json::object{{"arguments", part}}}};
      json::object choice{{"index", 0},
                          {"delta", json::object{{"tool_calls", json::array{std::move(call)}}}},
                          {"logprobs", nullptr},
                          {"finish_reason", nullptr}};
      return event({}, json::serialize(chat_chunk(meta_, std::move(choice))));
    }
    case Api::messages:
      return event("content_block_delta",
                   json::serialize(json::object{
                       {"type", "content_block_delta"},
                       {"index", index},
                       {"delta", json::object{{"type", "input_json_delta"}, {"partial_json", part}}}}));
    case Api::responses:
      return event("response.function_call_arguments.delta",
                   json::serialize(json::object{{"type", "response.function_call_arguments.delta"},
                                                {"sequence_number", sequence_++},
                                                {"item_id", "fc_" + tools_.calls[index].id},
                                                {"output_index", index},
                                                {"delta", part}}));
    case Api::completions:
      break;
  }
  return {};
}

std::string StreamEncoder::close_call() {
  if (open_ >= tools_.calls.size()) {
    return {};
  }
  const std::size_t index = std::exchange(open_, static_cast<std::size_t>(-1));
  const engine::ToolCall& c = tools_.calls[index];
  const std::string_view args = std::string_view(c.arguments).substr(0, sent_);
  switch (api_) {
    case Api::messages:
      return event("content_block_stop",
                   json::serialize(json::object{{"type", "content_block_stop"}, {"index", index}}));
    case Api::responses: {
      std::string out = event("response.function_call_arguments.done",
                              json::serialize(json::object{{"type", "response.function_call_arguments.done"},
                                                           {"sequence_number", sequence_++},
                                                           {"item_id", "fc_" + c.id},
                                                           {"output_index", index},
                                                           {"name", c.name},
                                                           {"arguments", args}}));
      out += event("response.output_item.done",
                   json::serialize(json::object{{"type", "response.output_item.done"},
                                                {"sequence_number", sequence_++},
                                                {"output_index", index},
                                                {"item", function_call_item(c, args, "completed")}}));
      return out;
    }
    case Api::chat:
    case Api::completions:
      break;
  }
  return {};
}

}  // namespace warden::sim
