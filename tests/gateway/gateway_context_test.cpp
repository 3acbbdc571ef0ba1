// The context length through the gateway: max_tokens lowered to fit (from the estimate, then from the
// engine's own figures), a prompt that alone is over answered in the client's wording, the option to turn
// it off; the billing block dropped; prefix breaks counted.
#include <gtest/gtest.h>

#include "gateway_support.hpp"

using namespace gateway_test;

namespace {

constexpr int kContext = 512;

std::unique_ptr<ChildProcess> start_small_sim() {
  auto p = std::make_unique<ChildProcess>(std::vector<std::string>{
      WARDEN_BINARY, "sim", "--port", "0", "--data-parallel-size", "1", "--preset", "instant",
      "--max-model-len", std::to_string(kContext), "--served-model-name", kServed, "--log-level", "warn"});
  p->wait_for_port();
  return p;
}

std::string models(int sim_port) {
  return dp_model(sim_port, 1) + dp_model(sim_port, 1, "{ affinity: true }", "off") +
         "    fit_max_tokens: false\n    normalize_prompt: false\n";
}

// Waits until the warden learned the context length from the engine's /v1/models.
void wait_for_context(int warden_port, const std::string& model = "m") {
  ASSERT_TRUE(wait_until([&] { return card(warden_port, model).at("max_model_len").is_int64(); }))
      << boost::json::serialize(card(warden_port, model));
  EXPECT_EQ(num(card(warden_port, model).at("max_model_len")), kContext);
}

std::string messages_body(const std::string& model, const std::string& text, int max_tokens,
                          const boost::json::value& system = nullptr) {
  boost::json::object o{
      {"model", model},
      {"max_tokens", max_tokens},
      {"messages", boost::json::array{boost::json::object{{"role", "user"}, {"content", text}}}}};
  if (!system.is_null()) {
    o["system"] = system;
  }
  return boost::json::serialize(o);
}

std::string words(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s += "word ";
  }
  return s;
}

std::int64_t metric(int warden_port, const std::string& line_start) {
  Client c(warden_port);
  const std::string text = c.get("/metrics").body;
  const auto at = text.find(line_start + " ");
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + line_start.size() + 1));
}

}  // namespace

TEST(GatewayContext, MaxTokensIsLoweredToFitInEveryApi) {
  auto sim = start_small_sim();
  Warden w(models(sim->port()));
  wait_for_context(w.port);
  Client c(w.port);
  // The estimate (~4 bytes a token) undercounts these short prompts (the chat template adds tokens):
  // the engine refuses the first cap and the warden sends again with the engine's own figures.
  auto r = c.post("/v1/chat/completions", chat_body("hi", 32000, false));
  EXPECT_EQ(r.status, 200u) << r.body;
  auto u = json_of(r).at("usage");
  EXPECT_LE(num(u.at("prompt_tokens")) + num(u.at("completion_tokens")), kContext);
  r = c.post("/v1/chat/completions",
             R"({"model":"m","max_completion_tokens":100000,"messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(r.status, 200u) << r.body;
  r = c.post("/v1/completions", R"({"model":"m","prompt":"hi","max_tokens":100000})");
  EXPECT_EQ(r.status, 200u) << r.body;
  r = c.post("/v1/responses", R"({"model":"m","input":"hi","max_output_tokens":100000})");
  EXPECT_EQ(r.status, 200u) << r.body;
  r = c.post("/v1/messages", messages_body("m", "hi", 32000));
  EXPECT_EQ(r.status, 200u) << r.body;
  // Streamed too.
  r = c.post("/v1/chat/completions", chat_body("hi", 32000, true));
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_NE(r.body.find("[DONE]"), std::string::npos);
  // Turned off: the engine's refusal as it is.
  wait_for_context(w.port, "off");
  r = c.post("/v1/chat/completions", chat_body("hi", 32000, false, "off"));
  EXPECT_EQ(r.status, 400u) << r.body;
  EXPECT_NE(r.body.find("'max_tokens' is too large: 32000"), std::string::npos) << r.body;
}

TEST(GatewayContext, APromptOverTheContextGetsTheClientsOwnError) {
  auto sim = start_small_sim();
  Warden w(models(sim->port()));
  wait_for_context(w.port);
  Client c(w.port);
  // Near the limit by the estimate: the engine decides, and its figures go into the client's wording.
  auto r = c.post("/v1/messages", messages_body("m", words(600), 100));
  ASSERT_EQ(r.status, 400u) << r.body;
  auto e = json_of(r).as_object();
  EXPECT_EQ(e.at("type"), "error");
  EXPECT_EQ(e.at("error").at("type"), "invalid_request_error");
  const std::string msg(e.at("error").at("message").as_string());
  EXPECT_TRUE(msg.starts_with("prompt is too long: ")) << msg;
  EXPECT_TRUE(msg.ends_with(" tokens > 512 maximum")) << msg;
  r = c.post("/v1/chat/completions", chat_body(words(600), 100, false));
  ASSERT_EQ(r.status, 400u) << r.body;
  EXPECT_EQ(json_of(r).at("error").at("code"), "context_length_exceeded");
  EXPECT_NE(r.body.find("maximum context length is 512 tokens"), std::string::npos) << r.body;
  // Clearly over by the estimate: refused without asking the engine.
  r = c.post("/v1/messages", messages_body("m", words(2000), 100));
  ASSERT_EQ(r.status, 400u) << r.body;
  EXPECT_TRUE(
      std::string(json_of(r).at("error").at("message").as_string()).starts_with("prompt is too long: "));
}

TEST(GatewayContext, BillingBlockIsNoPrefixBreakButAChangedStartIs) {
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1));
  Client c(w.port);
  const std::string system(5000, 's');
  auto blocks = [&](const std::string& version, const std::string& text) {
    return boost::json::array{boost::json::object{{"type", "text"},
                                                  {"text", "x-anthropic-billing-header: cc_version=2.1.332." +
                                                               version + "; cc_entrypoint=sdk-cli;"}},
                              boost::json::object{{"type", "text"}, {"text", text}}};
  };
  auto turn = [&](const std::string& session, const boost::json::value& sys) {
    auto r = c.post("/v1/messages", messages_body("m", "hi", 4, sys), {{"X-Warden-Session", session}});
    EXPECT_EQ(r.status, 200u) << r.body;
  };
  // The billing line differs (it does between conversations): dropped, so the starts are equal.
  turn("a", blocks("0b8", system));
  turn("a", blocks("0ce", system));
  EXPECT_EQ(num(card(w.port).at("prefix_breaks")), 0);
  EXPECT_EQ(metric(w.port, R"(lm_warden_prefix_breaks_total{model="m"})"), 0);
  // The system prompt itself changed within one conversation: a break.
  std::string edited = system;
  edited[100] = 'e';
  turn("a", blocks("0ce", edited));
  EXPECT_EQ(num(card(w.port).at("prefix_breaks")), 1);
  EXPECT_EQ(metric(w.port, R"(lm_warden_prefix_breaks_total{model="m"})"), 1);
  // Another conversation with another start is no break.
  turn("b", blocks("0b8", system));
  EXPECT_EQ(num(card(w.port).at("prefix_breaks")), 1);
  // A plain string system prompt that changes between two turns of one session.
  turn("c", boost::json::value(std::string(5000, 'x')));
  turn("c", boost::json::value(std::string(5000, 'y')));
  EXPECT_EQ(num(card(w.port).at("prefix_breaks")), 2);
}
