#include "protocol/error_body.hpp"

#include <gtest/gtest.h>

namespace warden::protocol {
namespace {

TEST(ErrorBody, OpenAiShapeWithNullParamAndCode) {
  EXPECT_EQ(openai_error_body({.message = "bad", .type = "invalid_request_error"}),
            R"({"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}})");
  EXPECT_EQ(format_error(ErrorFormat::openai, 400, "bad"),
            openai_error_body({"bad", "invalid_request_error"}));
}

TEST(ErrorBody, StringParamAndCode) {
  EXPECT_EQ(openai_error_body({.message = "m", .type = "t", .param = "max_tokens", .code = "too_big"}),
            R"({"error":{"message":"m","type":"t","param":"max_tokens","code":"too_big"}})");
}

TEST(ErrorBody, VllmShapeHasTheStatusAsANumericCode) {
  EXPECT_EQ(
      openai_error_body(
          {.message = "Request body too large", .type = vllm_error_type(413), .status_code = 413}),
      R"({"error":{"message":"Request body too large","type":"RequestEntityTooLarge","param":null,"code":413}})");
  EXPECT_EQ(vllm_error_type(400), "BadRequestError");
  EXPECT_EQ(vllm_error_type(404), "NotFoundError");
  EXPECT_EQ(vllm_error_type(422), "BadRequestError");
  EXPECT_EQ(vllm_error_type(500), "InternalServerError");
  EXPECT_EQ(vllm_error_type(503), "InternalServerError");
}

TEST(ErrorBody, MessageAndTypeOnly) {
  EXPECT_EQ(openai_error_body({.message = "no \"x\"", .type = "not_found_error", .param_and_code = false}),
            R"({"error":{"message":"no \"x\"","type":"not_found_error"}})");
}

TEST(ErrorBody, MessagesAreAlwaysValidJson) {
  EXPECT_EQ(openai_error_body({.message = "a\nb\xFF", .type = "t", .param_and_code = false}),
            R"({"error":{"message":"a\nb\ufffd","type":"t"}})");
}

}  // namespace
}  // namespace warden::protocol

// A held stream turns an engine's error answer into an error event: its message, whatever the shape.
TEST(ErrorBody, TheMessageOfAnErrorBodyInEachShape) {
  EXPECT_EQ(warden::protocol::error_message(
                R"({"error":{"message":"too long","type":"BadRequestError","code":400}})"),
            "too long");
  EXPECT_EQ(
      warden::protocol::error_message(R"({"type":"error","error":{"type":"api_error","message":"busy"}})"),
      "busy");
  EXPECT_EQ(
      warden::protocol::error_message(R"({"object":"error","message":"old vLLM","type":"BadRequestError"})"),
      "old vLLM");
  EXPECT_EQ(warden::protocol::error_message(R"({"error":{"message":7}})"), std::nullopt);
  EXPECT_EQ(warden::protocol::error_message("Internal Server Error"), std::nullopt);
  EXPECT_EQ(warden::protocol::error_message("[1,2]"), std::nullopt);
}
