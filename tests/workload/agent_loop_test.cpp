#include "workload/agent_loop.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "engine/chat_template.hpp"

namespace warden::workload {
namespace {

// Small sizes (characters) so the tests are about structure, not token counts.
WorkloadConfig agentic(std::uint64_t seed = 1) {
  WorkloadConfig c = *preset("agentic");
  c.chars_per_token = 4.0;
  c.seed = seed;
  c.billing_header = true;
  c.system_tokens = 100;
  c.first_tokens = 60;
  c.agentic.tools_tokens = 280;
  c.agentic.subagent_system_tokens = 50;
  c.agentic.subagent_tools_tokens = 200;
  c.agentic.task_tokens = 20;
  c.agentic.result_tokens = 40;
  c.agentic.result_tokens_max = 200;
  c.agentic.report_tokens = 30;
  c.agentic.summary_tokens = 50;
  c.agentic.think_time = 10.0;
  c.agentic.subagent_share = 0.6;
  c.agentic.parallel_share = 0.4;
  c.agentic.context_window = 100000;  // no compaction unless a test lowers it
  return c;
}

// One request as the scripted driver sent it.
struct Sent {
  double at = 0;
  std::size_t slot = 0;
  Conversation conversation;
  HttpRequestSpec spec;
  TurnEnd end;
  double ended = 0;
  std::size_t tokens = 0;  // the thread's prompt as the loop estimates it, when sent
};

// Every request takes `latency` and is answered with the same short text: a deterministic stand-in for
// an engine, so the runs depend on the loop alone.
std::vector<Sent> run(const Workload& w, AgentLoop& loop, double until, double latency = 1.0) {
  std::vector<Sent> sent;
  std::multimap<double, std::size_t> done;  // end time -> index into sent
  double now = 0;
  for (int guard = 0; guard < 1'000'000 && now <= until; ++guard) {
    for (const std::size_t slot : loop.take_ready(now)) {
      Sent s;
      s.at = now;
      s.slot = slot;
      s.conversation = loop.conversation(slot);
      s.tokens = loop.history_tokens(slot);
      s.spec = render_anthropic(w, s.conversation, "m");
      sent.push_back(std::move(s));
      done.emplace(now + latency, sent.size() - 1);
    }
    double next = done.empty() ? until + 1 : done.begin()->first;
    if (const auto due = loop.next_ready_at()) {
      next = std::min(next, *due);
    }
    now = std::max(now, next);
    while (!done.empty() && done.begin()->first <= now) {
      Sent& s = sent[done.begin()->second];
      done.erase(done.begin());
      s.ended = now;
      s.end = loop.complete(s.slot, now, "Done with this step.");
    }
  }
  return sent;
}

std::string header(const HttpRequestSpec& spec, std::string_view name) {
  for (const auto& [k, v] : spec.headers) {
    if (k == name) {
      return v;
    }
  }
  return {};
}

boost::json::object body(const Sent& s) {
  return boost::json::parse(s.spec.body).as_object();
}

TEST(AgentLoop, SameSeedSameRequests) {
  const Workload w(agentic());
  AgentLoop a(w, 3, 0.0, 0);
  AgentLoop b(w, 3, 0.0, 0);
  const auto ra = run(w, a, 200);
  const auto rb = run(w, b, 200);
  ASSERT_EQ(ra.size(), rb.size());
  ASSERT_GT(ra.size(), 30U);
  for (std::size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].at, rb[i].at);
    EXPECT_EQ(ra[i].spec.body, rb[i].spec.body);
    EXPECT_EQ(ra[i].spec.headers, rb[i].spec.headers);
  }
  // Another seed gives other conversations.
  const Workload other(agentic(2));
  AgentLoop c(other, 3, 0.0, 0);
  const auto rc = run(other, c, 200);
  EXPECT_NE(rc.front().spec.body, ra.front().spec.body);
}

TEST(AgentLoop, SubagentsCarryAgentIdAndShareTheirPrefixAcrossSessions) {
  const Workload w(agentic());
  AgentLoop loop(w, 6, 0.0, 0);
  const auto sent = run(w, loop, 400);
  ASSERT_GT(loop.counts().subagents_started, 2U);
  const std::regex id_form("a[0-9a-f]{16}");
  std::map<std::size_t, std::set<std::string>> prefixes;  // subagent type -> system + tools
  std::set<std::uint64_t> sessions_with_subagents;
  std::set<std::string> main_prefix;
  for (const Sent& s : sent) {
    const std::string id = header(s.spec, "X-Claude-Code-Agent-Id");
    EXPECT_EQ(header(s.spec, "X-Claude-Code-Session-Id"), s.conversation.session_id);
    const boost::json::object b = body(s);
    const auto& system = b.at("system").as_array();
    ASSERT_EQ(system.size(), 2U);  // billing line, then the shared prompt
    const std::string prefix = boost::json::serialize(system[1]) + boost::json::serialize(b.at("tools"));
    if (s.slot % 3 == 0) {
      EXPECT_TRUE(id.empty());
      EXPECT_EQ(b.at("tools").as_array().size(), 14U);
      main_prefix.insert(prefix);
      continue;
    }
    EXPECT_TRUE(std::regex_match(id, id_form)) << id;
    EXPECT_EQ(id, s.conversation.agent_id);
    EXPECT_EQ(b.at("tools").as_array().size(), 10U);
    prefixes[s.conversation.subagent_type].insert(prefix);
    sessions_with_subagents.insert(s.conversation.session_index);
  }
  EXPECT_GT(sessions_with_subagents.size(), 1U);
  EXPECT_EQ(main_prefix.size(), 1U);  // one main prefix for every session
  for (const auto& [type, set] : prefixes) {
    EXPECT_EQ(set.size(), 1U) << "subagent type " << type;
    EXPECT_EQ(main_prefix.count(*set.begin()), 0U);
  }
}

TEST(AgentLoop, SubagentsRunInTheBackgroundAndReportBeforeTheFinalReply) {
  const Workload w(agentic());
  AgentLoop loop(w, 4, 0.0, 0);
  const auto sent = run(w, loop, 400);
  bool overlapped = false;
  for (const Sent& sub : sent) {
    if (sub.slot % 3 == 0) {
      continue;
    }
    for (const Sent& m : sent) {
      if (m.slot == sub.slot - sub.slot % 3 && m.at < sub.ended && sub.at < m.ended) {
        overlapped = true;
      }
    }
  }
  EXPECT_TRUE(overlapped) << "a subagent's request and its main thread's were never in flight together";
  // An Agent tool call starts a subagent whose first request follows at once.
  std::size_t agent_calls = 0;
  for (const Sent& s : sent) {
    for (const Message& m : s.conversation.messages) {
      for (const ToolCall& c : m.calls) {
        agent_calls += c.name == "Agent" ? 1 : 0;
      }
    }
  }
  EXPECT_GT(agent_calls, 0U);
}

TEST(AgentLoop, ParallelCallsAreAnsweredInOneMessage) {
  const Workload w(agentic());
  AgentLoop loop(w, 3, 0.0, 0);
  const auto sent = run(w, loop, 200);
  std::size_t parallel = 0;
  for (const Sent& s : sent) {
    const auto& msgs = s.conversation.messages;
    for (std::size_t i = 0; i + 1 < msgs.size(); ++i) {
      if (msgs[i].calls.empty()) {
        continue;
      }
      ASSERT_EQ(msgs[i].role, Role::assistant);
      const Message& answer = msgs[i + 1];
      ASSERT_EQ(answer.results.size(), msgs[i].calls.size());
      for (std::size_t k = 0; k < answer.results.size(); ++k) {
        EXPECT_EQ(answer.results[k].id, msgs[i].calls[k].id);
      }
      parallel += msgs[i].calls.size() > 1 ? 1 : 0;
    }
  }
  EXPECT_GT(parallel, 0U);
}

TEST(AgentLoop, CompactionReplacesTheHistoryAndKeepsThePrefix) {
  WorkloadConfig c = agentic();
  c.agentic.context_window = 2000;  // ~ a few rounds
  c.agentic.rounds_mean = 20;
  c.agentic.subagent_share = 0;
  const Workload w(c);
  AgentLoop loop(w, 1, 0.0, 0);
  const auto sent = run(w, loop, 300);
  ASSERT_GT(loop.counts().compactions, 0U);
  for (const Sent& s : sent) {
    // Tool results are cut so that every request fits the window with room for its reply.
    EXPECT_LE(s.tokens + c.max_output, c.agentic.context_window);
  }
  bool seen = false;
  for (std::size_t i = 1; i < sent.size(); ++i) {
    const Sent& before = sent[i - 1];
    const Sent& after = sent[i];
    if (after.conversation.compactions != before.conversation.compactions + 1) {
      continue;
    }
    seen = true;
    // The request before asked for the summary; after it the history is one message, much shorter.
    EXPECT_LT(after.conversation.messages.size(), before.conversation.messages.size());
    EXPECT_EQ(after.conversation.messages.size(), 1U);
    EXPECT_LT(after.spec.body.size(), before.spec.body.size());
    const auto b0 = body(before);
    const auto b1 = body(after);
    EXPECT_EQ(b0.at("system"), b1.at("system"));
    EXPECT_EQ(b0.at("tools"), b1.at("tools"));
    EXPECT_EQ(after.conversation.session_id, before.conversation.session_id);
  }
  EXPECT_TRUE(seen);
}

TEST(AgentLoop, TasksStartWithAPromptAndEndWithTextAfterThinkTime) {
  const Workload w(agentic());
  AgentLoop loop(w, 2, 0.0, 0);
  const auto sent = run(w, loop, 600);
  std::size_t tasks = 0;
  std::map<std::size_t, double> first_of_task;  // main slot -> when its current task's first request went
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const Sent& s = sent[i];
    if (s.slot % 3 != 0) {
      EXPECT_FALSE(s.end.task_finished);
      continue;
    }
    const Message& last = s.conversation.messages.back();
    const bool task_start = last.results.empty() && last.role == Role::user &&
                            (s.conversation.messages.size() == 1 ||
                             s.conversation.messages[s.conversation.messages.size() - 2].calls.empty());
    if (task_start && s.conversation.compactions == 0) {
      first_of_task[s.slot] = s.at;
    }
    if (!s.end.task_finished) {
      continue;
    }
    ++tasks;
    ASSERT_TRUE(first_of_task.count(s.slot));
    EXPECT_EQ(s.end.task_started_at, first_of_task[s.slot]);
    // The next request of this agent is the next task's prompt, after the user read the reply.
    for (std::size_t j = i + 1; j < sent.size(); ++j) {
      if (sent[j].slot == s.slot) {
        EXPECT_GE(sent[j].at - s.ended, 0.5 * 10.0);
        EXPECT_TRUE(sent[j].conversation.messages.back().results.empty());
        break;
      }
    }
  }
  EXPECT_EQ(tasks, loop.counts().tasks_finished);
  EXPECT_GT(tasks, 2U);
  // After `tasks` tasks a session ends and a new session id follows.
  EXPECT_GT(loop.counts().sessions_finished, 0U);
  EXPECT_GT(loop.sessions_started(), 2U);
}

// Interactive sessions run after the loop's headless agents, each a person who reads the interactive
// think time between tasks; the headless agents' own think time is unchanged.
TEST(AgentLoop, InteractiveSessionsComeAfterTheHeadlessAgentsAndTheirPersonReadsLonger) {
  WorkloadConfig c = agentic();
  c.agentic.interactive = 1;
  c.agentic.interactive_think_time = 100.0;
  const Workload w(c);
  AgentLoop loop(w, 2, 0.0, 0);
  ASSERT_EQ(loop.sessions(), 3U);
  ASSERT_EQ(loop.slots(), 9U);
  EXPECT_FALSE(loop.interactive(0));
  EXPECT_FALSE(loop.interactive(1));
  EXPECT_TRUE(loop.interactive(2));
  EXPECT_EQ(loop.session_of(7), 2U);
  const auto sent = run(w, loop, 1200);
  std::map<std::size_t, std::size_t> gaps;  // main slot -> think gaps seen
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const Sent& s = sent[i];
    if (!s.end.task_finished || s.end.session_finished) {
      continue;
    }
    for (std::size_t j = i + 1; j < sent.size(); ++j) {
      if (sent[j].slot == s.slot) {
        const double gap = sent[j].at - s.ended;
        const double think = s.slot == 6 ? 100.0 : 10.0;
        EXPECT_GE(gap, 0.5 * think) << "slot " << s.slot;
        EXPECT_LT(gap, 1.5 * think) << "slot " << s.slot;
        ++gaps[s.slot];
        break;
      }
    }
  }
  EXPECT_GT(gaps[0], 0U);
  EXPECT_GT(gaps[6], 0U);
}

// A fleet that shares session ids (AgenticConfig::session_keys): agent a's sessions all send key a mod K,
// its subagents too; each session still starts afresh (its own history, a new session index). By default
// every session sends its own id. With agent_threads each agent's main thread also names itself, one id per
// session of the agent.
TEST(AgentLoop, AgentsShareTheirSessionKeysAndStillStartEachSessionAfresh) {
  WorkloadConfig c = agentic();
  c.agentic.tasks = 1;  // several sessions per agent within the run
  const auto keys_of = [](const std::vector<Sent>& sent) {
    std::map<std::size_t, std::set<std::string>> by_agent;  // agent -> keys
    std::set<std::string> all;
    std::set<std::uint64_t> sessions;
    for (const Sent& s : sent) {
      sessions.insert(s.conversation.session_index);
      const std::string key = header(s.spec, "X-Claude-Code-Session-Id");
      by_agent[s.slot / 3].insert(key);
      all.insert(key);
    }
    return std::tuple{by_agent, all, sessions.size()};
  };
  const Workload own(c);
  AgentLoop loop_own(own, 5, 0.0, 0);
  const auto sent_own = run(own, loop_own, 400);
  const auto [own_agents, own_keys, own_sessions] = keys_of(sent_own);
  EXPECT_GT(own_sessions, 10U);
  EXPECT_EQ(own_keys.size(), own_sessions);

  c.agentic.session_keys = 2;
  const Workload shared(c);
  AgentLoop loop(shared, 5, 0.0, 0);
  const auto sent = run(shared, loop, 400);
  const auto [by_agent, all, sessions] = keys_of(sent);
  EXPECT_EQ(all.size(), 2U);
  for (const auto& [agent, keys] : by_agent) {
    EXPECT_EQ(keys.size(), 1U) << "agent " << agent;
    EXPECT_EQ(*keys.begin(), *by_agent.at(agent % 2).begin()) << "agent " << agent;
  }
  EXPECT_NE(*by_agent.at(0).begin(), *by_agent.at(1).begin());
  // Each session starts from its first prompt: the first request of every session index is the prefix and
  // that prompt, whatever the key's other sessions hold.
  std::set<std::uint64_t> seen;
  for (const Sent& s : sent) {
    if (s.slot % 3 == 0 && seen.insert(s.conversation.session_index).second) {
      EXPECT_EQ(s.conversation.messages.size(), 1U);
      EXPECT_EQ(s.tokens, 100U + 280U + 60U);
      EXPECT_TRUE(header(s.spec, "X-Claude-Code-Agent-Id").empty());
    }
  }
  EXPECT_EQ(seen.size(), sessions);

  c.agentic.agent_threads = true;
  const Workload threads(c);
  AgentLoop loop_threads(threads, 5, 0.0, 0);
  const auto sent_threads = run(threads, loop_threads, 400);
  EXPECT_EQ(std::get<1>(keys_of(sent_threads)).size(), 2U);
  std::map<std::uint64_t, std::set<std::string>> main_ids;  // session index -> its main thread's ids
  for (const Sent& s : sent_threads) {
    if (s.slot % 3 == 0) {
      EXPECT_TRUE(std::regex_match(header(s.spec, "X-Claude-Code-Agent-Id"), std::regex("a[0-9a-f]{16}")));
      main_ids[s.conversation.session_index].insert(header(s.spec, "X-Claude-Code-Agent-Id"));
    }
  }
  std::set<std::string> distinct;
  for (const auto& [session, ids] : main_ids) {
    EXPECT_EQ(ids.size(), 1U) << "session " << session;
    distinct.insert(*ids.begin());
  }
  EXPECT_EQ(distinct.size(), main_ids.size());
  c.agentic.session_keys = 0;
  EXPECT_FALSE(validate(c).has_value());  // agent threads need shared keys
}

TEST(AgentLoop, AFailureAbandonsTheSessionOnceItsRequestsAreBack) {
  const Workload w(agentic());
  AgentLoop loop(w, 1, 0.0, 0);
  ASSERT_EQ(loop.take_ready(0.0), (std::vector<std::size_t>{0}));
  const std::string first = loop.conversation(0).session_id;
  const TurnEnd end = loop.fail(0, 1.0, 2.0);
  ASSERT_TRUE(end.next_ready_at.has_value());
  EXPECT_GE(*end.next_ready_at, 1.0 + 2.0);
  EXPECT_TRUE(loop.take_ready(2.5).empty());
  const auto ready = loop.take_ready(*end.next_ready_at);
  ASSERT_EQ(ready.size(), 1U);
  EXPECT_NE(loop.conversation(0).session_id, first);
  EXPECT_EQ(loop.sessions_started(), 2U);
}

TEST(AgentLoop, OpenAiRequestsCarryToolCallsAndToolMessages) {
  const Workload w(agentic());
  AgentLoop loop(w, 2, 0.0, 0);
  const auto sent = run(w, loop, 100);
  bool checked = false;
  for (const Sent& s : sent) {
    const auto& msgs = s.conversation.messages;
    // (A results message that also carries subagent reports ends with a user text message after them.)
    if (msgs.size() < 3 || msgs[msgs.size() - 2].calls.empty() || !msgs.back().text.empty()) {
      continue;
    }
    const std::string text = render_openai(w, s.conversation, "m").body;
    // The engine stand-in renders it as vLLM would (the sim answers 400 to what it cannot).
    EXPECT_TRUE(engine::render_prompt(engine::ApiKind::chat_completions, text).has_value());
    EXPECT_TRUE(engine::render_prompt(engine::ApiKind::anthropic_messages, s.spec.body).has_value());
    const auto body = boost::json::parse(text).as_object();
    EXPECT_EQ(body.at("tools").as_array().size(), s.slot % 3 == 0 ? 14U : 10U);
    const auto& out = body.at("messages").as_array();
    // The last assistant message carries the calls; a `tool` message answers each, in order.
    const Message& asked = msgs[msgs.size() - 2];
    const std::size_t n = asked.calls.size();
    ASSERT_GE(out.size(), n + 1);
    const auto& assistant = out[out.size() - n - 1].as_object();
    ASSERT_EQ(assistant.at("role").as_string(), "assistant");
    ASSERT_EQ(assistant.at("tool_calls").as_array().size(), n);
    for (std::size_t k = 0; k < n; ++k) {
      const auto& tool = out[out.size() - n + k].as_object();
      EXPECT_EQ(tool.at("role").as_string(), "tool");
      EXPECT_EQ(tool.at("tool_call_id").as_string(), asked.calls[k].id);
      EXPECT_EQ(assistant.at("tool_calls").as_array()[k].at("function").at("name").as_string(),
                asked.calls[k].name);
    }
    checked = true;
  }
  EXPECT_TRUE(checked);
}

TEST(AgentLoop, ThePresetIsValidAndTheReferenceIsUnchanged) {
  const auto a = preset("agentic");
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->agentic.enabled);
  EXPECT_TRUE(validate(*a).has_value());
  const auto ref = preset("claude-code");
  ASSERT_TRUE(ref.has_value());
  EXPECT_FALSE(ref->agentic.enabled);
  const Workload w(*ref);
  EXPECT_TRUE(w.tools_json(w.start_session(0)).empty());
  EXPECT_EQ(render_anthropic(w, w.start_session(0), "m").body.find("\"tools\""), std::string::npos);
  WorkloadConfig tiny = *a;
  tiny.agentic.context_window = 4000;  // smaller than the prefix
  EXPECT_FALSE(validate(tiny).has_value());
}

}  // namespace
}  // namespace warden::workload
