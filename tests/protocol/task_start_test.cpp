// A request starts an agent task when its history ends with the user's own words, in each API's shape.
#include "protocol/task_start.hpp"

#include <gtest/gtest.h>

namespace warden::protocol {
namespace {

// As the gateway asks it: the body is scanned (validated, its layout found) first; invalid JSON is no start.
bool starts_task(ApiKind api, std::string_view body) {
  const auto layout = scan_layout(body);
  return layout && protocol::starts_task(api, body, *layout);
}

TEST(TaskStart, AnAnthropicTaskStartsWithTheUsersWordsNotWithToolResults) {
  const auto messages = ApiKind::anthropic_messages;
  EXPECT_TRUE(starts_task(messages, R"({"messages":[{"role":"user","content":"fix the bug"}]})"));
  EXPECT_TRUE(starts_task(messages, R"({"messages":[{"role":"user","content":[{"type":"text","text":"go"},
      {"type":"text","text":"<system-reminder>notes</system-reminder>"}]}],"tools":[]})"));
  EXPECT_FALSE(starts_task(messages, R"({"messages":[{"role":"user","content":"fix it"},
      {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"..."},
      {"type":"text","text":"<system-reminder>notes</system-reminder>"}]}]})"));
  EXPECT_FALSE(starts_task(messages, R"({"messages":[{"role":"user","content":"a"},
      {"role":"assistant","content":"prefilled"}]})"))
      << "the assistant's turn last: the model continues, no new task";
}

TEST(TaskStart, AnOpenAiChatTaskStartsWithAUserMessageNotAToolMessage) {
  const auto chat = ApiKind::openai_chat;
  EXPECT_TRUE(
      starts_task(chat, R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":"go"}]})"));
  EXPECT_FALSE(starts_task(chat, R"({"messages":[{"role":"user","content":"go"},
      {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"a.txt"}]})"));
}

TEST(TaskStart, AResponsesTaskStartsWithAUserItemNotACallOutput) {
  const auto responses = ApiKind::openai_responses;
  EXPECT_TRUE(starts_task(responses, R"({"input":"list the files"})"));
  EXPECT_TRUE(starts_task(
      responses,
      R"({"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}]})"));
  EXPECT_FALSE(starts_task(responses, R"({"input":[{"type":"message","role":"user","content":"go"},
      {"type":"function_call","call_id":"c1","name":"shell","arguments":"{}"},
      {"type":"function_call_output","call_id":"c1","output":"a.txt"}]})"));
}

TEST(TaskStart, ABodyWithoutAHistoryIsNoTaskStart) {
  EXPECT_FALSE(starts_task(ApiKind::anthropic_messages, "not json"));
  EXPECT_FALSE(starts_task(ApiKind::anthropic_messages, "[1,2]"));
  EXPECT_FALSE(starts_task(ApiKind::anthropic_messages, R"({"messages":[]})"));
  EXPECT_FALSE(starts_task(ApiKind::openai_chat, R"({"messages":{"role":"user"}})"));
  EXPECT_FALSE(starts_task(ApiKind::openai_responses, R"({"input":[]})"));
}

TEST(TaskStart, OnlyTheLastTopLevelHistorysLastMessageCounts) {
  const auto messages = ApiKind::anthropic_messages;
  EXPECT_TRUE(starts_task(messages, R"({"messages":[{"role":"user","content":[{"type":"tool_result",
      "tool_use_id":"t1","content":[{"type":"text","text":"x"}]}]},{"role":"user","content":"next task"}]})"))
      << "a tool result in an earlier message does not count";
  EXPECT_FALSE(starts_task(messages, R"({"messages":[{"role":"user","content":"a"}],
      "messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"b"}]}]})"))
      << "a later \"messages\" replaces an earlier one, as a JSON reader keeps the last";
  EXPECT_TRUE(starts_task(messages, R"({"metadata":{"messages":[{"role":"tool"}]},
      "messages":[{"role":"user","content":"go"}],"input":[{"type":"function_call_output"}]})"))
      << "members of the same name at other depths, and the other API's history, are not the history";
  EXPECT_FALSE(starts_task(ApiKind::openai_responses, R"({"messages":[{"role":"user","content":"go"}]})"))
      << "Responses reads \"input\" only";
}

}  // namespace
}  // namespace warden::protocol
