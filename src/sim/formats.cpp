#include "sim/formats.hpp"

#include <fmt/format.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

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

std::string finish_reason(const UsageOut& u) {
  return u.length ? "length" : "stop";
}

std::string_view stop_reason(const UsageOut& u) {
  return u.length ? "max_tokens" : "end_turn";
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

}  // namespace

std::string make_id(Api api, std::uint64_t hi, std::uint64_t lo) {
  std::string_view prefix = api == Api::chat          ? "chatcmpl-"
                            : api == Api::completions ? "cmpl-"
                            : api == Api::responses   ? "resp_"
                                                      : "msg_";
  return fmt::format("{}{:016x}{:016x}", prefix, hi, lo);
}

std::string full_body(Api api, const ReplyMeta& meta, std::string_view text, const UsageOut& usage) {
  switch (api) {
    case Api::chat: {
      json::object message{{"role", "assistant"},
                           {"content", text},
                           {"refusal", nullptr},
                           {"annotations", nullptr},
                           {"audio", nullptr},
                           {"function_call", nullptr},
                           {"tool_calls", json::array{}},
                           {"reasoning_content", nullptr}};
      json::object choice{{"index", 0},
                          {"message", std::move(message)},
                          {"logprobs", nullptr},
                          {"finish_reason", finish_reason(usage)},
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
      json::array output{message_item(meta, text, response_status(usage))};
      return json::serialize(response_object(meta, response_status(usage), std::move(output), &usage));
    }
    case Api::messages: {
      json::array content{json::object{{"type", "text"}, {"text", text}}};
      return json::serialize(json::object{{"id", meta.id},
                                          {"type", "message"},
                                          {"role", "assistant"},
                                          {"model", meta.model},
                                          {"content", std::move(content)},
                                          {"stop_reason", stop_reason(usage)},
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
      return event({}, json::serialize(json::object{{"id", meta_.id},
                                                    {"object", "chat.completion.chunk"},
                                                    {"created", meta_.created},
                                                    {"model", meta_.model},
                                                    {"choices", json::array{std::move(choice)}}}));
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
  text_ += text;
  switch (api_) {
    case Api::chat: {
      json::object choice{{"index", 0}, {"delta", json::object{{"content", text}}}, {"logprobs", nullptr}};
      choice["finish_reason"] = last ? json::value(finish_reason(usage)) : json::value(nullptr);
      if (last) {
        choice["stop_reason"] = nullptr;
      }
      return event({}, json::serialize(json::object{{"id", meta_.id},
                                                    {"object", "chat.completion.chunk"},
                                                    {"created", meta_.created},
                                                    {"model", meta_.model},
                                                    {"choices", json::array{std::move(choice)}}}));
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
      std::string out = event("content_block_stop",
                              json::serialize(json::object{{"type", "content_block_stop"}, {"index", 0}}));
      out +=
          event("message_delta",
                json::serialize(json::object{
                    {"type", "message_delta"},
                    {"delta", json::object{{"stop_reason", stop_reason(usage)}, {"stop_sequence", nullptr}}},
                    {"usage", anthropic_usage(usage, true)}}));
      out += event("message_stop", json::serialize(json::object{{"type", "message_stop"}}));
      out += done;
      return out;
    }
    case Api::responses: {
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
      // The closing event is response.incomplete for a capped reply (OpenAI's stream events).
      const std::string type = fmt::format("response.{}", response_status(usage));
      json::array output{message_item(meta_, text_, response_status(usage))};
      out += event(type,
                   json::serialize(json::object{{"type", type},
                                                {"sequence_number", sequence_++},
                                                {"response", response_object(meta_, response_status(usage),
                                                                             std::move(output), &usage)}}));
      return out;
    }
  }
  return std::string(done);
}

}  // namespace warden::sim
