// Threads through real processes (a warden in front of `lm-warden sim`): a Claude Code session's main
// thread and its subagent (its requests carry X-Claude-Code-Agent-Id and another system prompt) each keep
// their own home, with no prefix break; a side request moves nothing; the admin API and /metrics show
// the session's threads; a fingerprint-keyed conversation that compacts starts afresh without a break.
#include <gtest/gtest.h>

#include "gateway_support.hpp"

using namespace gateway_test;

namespace {

constexpr const char* kSession = "5d2f0c7e-8a41-4b6e-9f3a-1c7d2e4b6a80";

// A Claude Code request: its system prompt, tools (none for a side request) and a history of `turns`.
std::string agent_body(const std::string& system, int turns, bool tools = true) {
  boost::json::array messages;
  for (int i = 0; i < turns; ++i) {
    messages.push_back(boost::json::object{{"role", "user"}, {"content", "step " + std::to_string(i)}});
    if (i + 1 < turns) {
      messages.push_back(boost::json::object{{"role", "assistant"}, {"content", "ok " + std::to_string(i)}});
    }
  }
  boost::json::object o{{"model", "m"}, {"max_tokens", 4}, {"system", system}, {"messages", messages}};
  if (tools) {
    o["tools"] =
        boost::json::array{boost::json::object{{"name", "Read"},
                                               {"description", "Reads a file"},
                                               {"input_schema", boost::json::object{{"type", "object"}}}}};
  }
  return boost::json::serialize(o);
}

struct Sent {
  std::string replica;
  std::string route;
};

// A request of the session (of its thread `agent` if given), or with `keyed` false one that names no
// session: the warden keys it by its fingerprint.
Sent send(Client& c, const std::string& body, const std::string& agent = "", bool keyed = true) {
  warden::net::Headers h;
  if (keyed) {
    h.push_back({"X-Claude-Code-Session-Id", kSession});
  }
  if (!agent.empty()) {
    h.push_back({"X-Claude-Code-Agent-Id", agent});
  }
  const auto r = c.post("/v1/messages", body, h);
  EXPECT_EQ(r.status, 200u) << r.body;
  return {r.header("x-warden-replica"), r.header("x-warden-route")};
}

TEST(GatewayThreads, MainThreadAndSubagentEachKeepTheirHomeWithoutBreaks) {
  auto sim = start_sim(4);
  Warden w(dp_model(sim->port(), 4));
  Client c(w.port);
  const std::string main_system(6000, 'm');   // the main thread's system prompt
  const std::string agent_system(5000, 'a');  // the subagent type's own
  const std::string agent = "a13cdae02ca695de0";
  const Sent main_first = send(c, agent_body(main_system, 1));
  const Sent sub_first = send(c, agent_body(agent_system, 1), agent);
  EXPECT_EQ(main_first.route, "new");
  EXPECT_EQ(sub_first.route, "new");
  // Interleaved turns, as a background subagent runs beside its main thread.
  for (int turn = 2; turn <= 5; ++turn) {
    const Sent sub = send(c, agent_body(agent_system, turn), agent);
    const Sent main = send(c, agent_body(main_system, turn));
    EXPECT_EQ(sub.route, "sticky");
    EXPECT_EQ(sub.replica, sub_first.replica);
    EXPECT_EQ(main.route, "sticky");
    EXPECT_EQ(main.replica, main_first.replica);
  }
  // A side request (no tools) of the session goes to the main thread's home and breaks nothing.
  const Sent side = send(c, agent_body("Write a title for this conversation.", 1, false));
  EXPECT_EQ(side.replica, main_first.replica);
  EXPECT_EQ(send(c, agent_body(main_system, 6)).route, "sticky");

  const auto m = card(w.port);
  EXPECT_EQ(num(m.at("prefix_breaks")), 0);
  EXPECT_EQ(num(m.at("side_requests")), 1);
  EXPECT_EQ(num(m.at("threads")), 1);
  EXPECT_EQ(num(m.at("threaded_sessions")), 1);
  const auto& sessions = m.at("sessions").as_array();
  ASSERT_EQ(sessions.size(), 1u) << boost::json::serialize(m);
  const auto& threads = sessions[0].at("threads").as_array();
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_TRUE(threads[0].at("main").as_bool());
  EXPECT_EQ(std::to_string(num(threads[0].at("home"))), main_first.replica);
  EXPECT_EQ(std::to_string(num(threads[1].at("home"))), sub_first.replica);
  EXPECT_EQ(threads[1].at("parent"), threads[0].at("thread"));
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_prefix_breaks_total{model="m"})"), 0);
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_threads{model="m"})"), 1);
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_side_requests_total{model="m"})"), 1);
  EXPECT_EQ(metric_value(w.port, R"(lm_warden_thread_compactions_total{model="m"})"), 0);

  Client admin(w.port);
  const auto r = admin.get("/api/models/m/sessions?limit=5", {{"Authorization", "Bearer secret"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(json_of(r).at("sessions").as_array().size(), 1u);
}

// A client that names no session is keyed by its fingerprint (system, tools, first user message). When it
// compacts (the history replaced by a summary) its fingerprint changes: a new conversation, not a break,
// and it goes back to the replica that holds its system prompt and tools (the one its earlier turns left
// there counts as one conversation more, within the margin).
TEST(GatewayThreads, AFingerprintKeyedConversationCompactedStartsAfreshWhereItsStartIsCached) {
  auto sim = start_sim(4);
  Warden w(dp_model(sim->port(), 4));
  Client c(w.port);
  const std::string system(6000, 's');
  const Sent first = send(c, agent_body(system, 1), "", false);
  EXPECT_EQ(first.route, "new");
  for (int turn = 2; turn <= 4; ++turn) {
    const Sent later = send(c, agent_body(system, turn), "", false);
    EXPECT_EQ(later.route, "sticky");
    EXPECT_EQ(later.replica, first.replica);
  }
  boost::json::object compacted = boost::json::parse(agent_body(system, 1)).as_object();
  compacted["messages"] = boost::json::array{
      boost::json::object{{"role", "user"}, {"content", "Summary of the conversation so far: steps 0-3."}}};
  const Sent after = send(c, boost::json::serialize(compacted), "", false);
  EXPECT_EQ(after.route, "new");
  EXPECT_EQ(after.replica, first.replica);
  compacted["messages"].as_array().push_back(boost::json::object{{"role", "assistant"}, {"content", "ok"}});
  compacted["messages"].as_array().push_back(boost::json::object{{"role", "user"}, {"content", "go on"}});
  const Sent next = send(c, boost::json::serialize(compacted), "", false);
  EXPECT_EQ(next.route, "sticky");
  EXPECT_EQ(next.replica, first.replica);
  const auto m = card(w.port);
  EXPECT_EQ(num(m.at("prefix_breaks")), 0);
  EXPECT_EQ(num(m.at("thread_compactions")), 0);
}

}  // namespace
