#pragma once
// Whether a request starts an agent task: its history ends with the user's own words, not with the results
// of the tool calls the model made (a client in its tool loop sends those back). The warden tells a task's
// end from the model's reply (text, no tool calls); this is the request's side of it.

#include <string_view>

#include "protocol/api.hpp"
#include "protocol/request.hpp"

namespace warden::protocol {

/// True when the last message of `body` is the user's and holds no tool result: Anthropic `messages` whose
/// last `user` message has no `tool_result` block, OpenAI chat whose last message is `user` (not `tool`),
/// a Responses `input` that is a string or whose last item is a user message (not a `*_call_output`).
/// `layout` is the body's (inspect_request() or scan_layout()): only the last message is parsed, so the
/// cost is that message's, not the history's. A body without such a message is no task start.
[[nodiscard]] bool starts_task(ApiKind api, std::string_view body, const BodyLayout& layout);

}  // namespace warden::protocol
