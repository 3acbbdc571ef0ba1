// `lm-warden sim` end to end: the real binary on 127.0.0.1 with --port 0, driven over HTTP.

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "protocol/prometheus.hpp"
#include "sim/sim_args.hpp"
#include "support/child_process.hpp"
#include "support/http.hpp"
#include "support/wait.hpp"

using namespace std::chrono_literals;
namespace json = boost::json;
using test_support::ChildProcess;
using test_support::Client;

namespace {

using sim_test::kModel;
using sim_test::sim_args;

std::string chat_body(const std::string& user, int max_tokens, bool stream = false,
                      bool include_usage = false) {
  json::object o{{"model", kModel},
                 {"messages", json::array{json::object{{"role", "user"}, {"content", user}}}},
                 {"max_tokens", max_tokens}};
  if (stream) {
    o["stream"] = true;
  }
  if (include_usage) {
    o["stream_options"] = json::object{{"include_usage", true}};
  }
  return json::serialize(o);
}

json::value parse(const std::string& s) {
  return json::parse(s);
}

// Per-engine value of one vLLM metric family.
std::map<std::string, double> metric(Client& c, const std::string& name) {
  auto res = c.get("/metrics");
  auto scrape = warden::protocol::parse_prometheus(res.body);
  std::map<std::string, double> out;
  if (!scrape) {
    return out;
  }
  for (const auto& s : scrape->samples) {
    if (s.name == name) {
      out[std::string(s.label("engine").value_or(""))] = s.value;
    }
  }
  return out;
}

class SimServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A short model length bounds the default max_tokens (the rest of the context) of fuzzed requests.
    sim_ = new ChildProcess(
        sim_args({"--data-parallel-size", "4", "--preset", "instant", "--max-model-len", "4096"}));
    port_ = sim_->wait_for_port();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(sim_->stop(), 0);  // SIGTERM → clean exit
    delete sim_;
    sim_ = nullptr;
  }
  static ChildProcess* sim_;
  static int port_;
};
ChildProcess* SimServer::sim_ = nullptr;
int SimServer::port_ = 0;

}  // namespace

TEST_F(SimServer, HealthAndModels) {
  Client c(port_);
  EXPECT_EQ(c.get("/health").status, 200u);
  auto m = c.get("/v1/models");
  ASSERT_EQ(m.status, 200u);
  auto v = parse(m.body);
  EXPECT_EQ(v.at("object").as_string(), "list");
  EXPECT_EQ(v.at("data").at(0).at("id").as_string(), kModel);
  EXPECT_EQ(v.at("data").at(0).at("object").as_string(), "model");
  EXPECT_EQ(v.at("data").at(0).at("max_model_len").as_int64(), 4096);  // as vLLM reports it
}

TEST_F(SimServer, ChatCompletionNonStreaming) {
  Client c(port_);
  auto r = c.post("/v1/chat/completions", chat_body("Tell me about caches", 7));
  ASSERT_EQ(r.status, 200u) << r.body;
  auto v = parse(r.body);
  EXPECT_EQ(v.at("object").as_string(), "chat.completion");
  EXPECT_TRUE(v.at("id").as_string().starts_with("chatcmpl-"));
  EXPECT_EQ(v.at("model").as_string(), kModel);
  const auto& choice = v.at("choices").at(0);
  EXPECT_EQ(choice.at("finish_reason").as_string(), "length");
  EXPECT_EQ(choice.at("message").at("role").as_string(), "assistant");
  EXPECT_FALSE(choice.at("message").at("content").as_string().empty());
  const auto& u = v.at("usage");
  EXPECT_EQ(u.at("completion_tokens").as_int64(), 7);
  EXPECT_GT(u.at("prompt_tokens").as_int64(), 3);
  EXPECT_EQ(u.at("total_tokens").as_int64(), u.at("prompt_tokens").as_int64() + 7);
  EXPECT_TRUE(u.at("prompt_tokens_details").at("cached_tokens").is_int64());
  // Deterministic output: the same prompt gives the same text.
  auto again = parse(c.post("/v1/chat/completions", chat_body("Tell me about caches", 7)).body);
  EXPECT_EQ(again.at("choices").at(0).at("message").at("content"), choice.at("message").at("content"));
}

TEST_F(SimServer, ChatStreamingEventOrderWithAndWithoutUsage) {
  Client c(port_);
  for (bool include_usage : {true, false}) {
    auto r = c.post("/v1/chat/completions", chat_body("Stream please", 4, true, include_usage));
    ASSERT_EQ(r.status, 200u);
    EXPECT_EQ(r.header("Content-Type").rfind("text/event-stream", 0), 0u);
    auto events = test_support::parse_sse(r.body);
    ASSERT_EQ(events.size(), include_usage ? 7u : 6u);  // role + 4 tokens (+ usage) + [DONE]
    auto first = parse(events[0].data);
    EXPECT_EQ(first.at("object").as_string(), "chat.completion.chunk");
    EXPECT_EQ(first.at("choices").at(0).at("delta").at("role").as_string(), "assistant");
    std::string text;
    for (int i = 1; i <= 4; ++i) {
      auto chunk = parse(events[static_cast<std::size_t>(i)].data);
      EXPECT_EQ(chunk.at("id"), first.at("id"));
      text += chunk.at("choices").at(0).at("delta").at("content").as_string();
      bool last = i == 4;
      EXPECT_EQ(chunk.at("choices").at(0).at("finish_reason").is_null(), !last);
    }
    EXPECT_FALSE(text.empty());
    if (include_usage) {
      auto usage = parse(events[5].data);
      EXPECT_TRUE(usage.at("choices").as_array().empty());
      EXPECT_EQ(usage.at("usage").at("completion_tokens").as_int64(), 4);
      EXPECT_TRUE(usage.at("usage").at("prompt_tokens_details").at("cached_tokens").is_int64());
    }
    EXPECT_EQ(events.back().data, "[DONE]");
  }
}

TEST_F(SimServer, CompletionsStreamingAndNot) {
  Client c(port_);
  std::string body = R"({"model":"test-model","prompt":"Once upon a time","max_tokens":3})";
  auto r = c.post("/v1/completions", body);
  ASSERT_EQ(r.status, 200u) << r.body;
  auto v = parse(r.body);
  EXPECT_EQ(v.at("object").as_string(), "text_completion");
  EXPECT_EQ(v.at("usage").at("completion_tokens").as_int64(), 3);
  auto s = c.post("/v1/completions",
                  R"({"model":"test-model","prompt":"Once upon a time","max_tokens":3,"stream":true,)"
                  R"("stream_options":{"include_usage":true}})");
  auto events = test_support::parse_sse(s.body);
  ASSERT_EQ(events.size(), 5u);  // 3 tokens, usage, [DONE]
  std::string text;
  for (int i = 0; i < 3; ++i) {
    text += parse(events[static_cast<std::size_t>(i)].data).at("choices").at(0).at("text").as_string();
  }
  EXPECT_EQ(text, v.at("choices").at(0).at("text").as_string());
  EXPECT_EQ(parse(events[3].data).at("usage").at("total_tokens").as_int64(),
            v.at("usage").at("total_tokens").as_int64());
  // Default max_tokens for completions is 16, as in vLLM.
  auto d = parse(c.post("/v1/completions", R"({"model":"test-model","prompt":"x"})").body);
  EXPECT_EQ(d.at("usage").at("completion_tokens").as_int64(), 16);
}

TEST_F(SimServer, AnthropicMessagesEventSequenceAndUsage) {
  Client c(port_);
  std::string body = R"({"model":"test-model","max_tokens":3,"system":"Be brief.",)"
                     R"("messages":[{"role":"user","content":"Hi there"}],"stream":true})";
  auto r = c.post("/v1/messages", body);
  ASSERT_EQ(r.status, 200u) << r.body;
  auto events = test_support::parse_sse(r.body);
  std::vector<std::string> names;
  for (const auto& e : events) {
    names.push_back(e.event.empty() ? e.data : e.event);
  }
  std::vector<std::string> expected{"message_start",       "content_block_start", "content_block_delta",
                                    "content_block_delta", "content_block_delta", "content_block_stop",
                                    "message_delta",       "message_stop",        "[DONE]"};
  EXPECT_EQ(names, expected);
  auto start = parse(events[0].data);
  EXPECT_TRUE(start.at("message").at("id").as_string().starts_with("msg_"));
  auto delta = parse(events[6].data);
  EXPECT_EQ(delta.at("delta").at("stop_reason").as_string(), "max_tokens");
  EXPECT_EQ(delta.at("usage").at("output_tokens").as_int64(), 3);
  // Non-streaming, sent twice on one pinned rank: the second reports the prompt as cache reads.
  std::string ns = R"({"model":"test-model","max_tokens":2,"system":")" + std::string(400, 'a') +
                   R"(","messages":[{"role":"user","content":"Hello"}]})";
  auto a = parse(c.post("/v1/messages", ns, {{"X-data-parallel-rank", "3"}}).body);
  auto b = parse(c.post("/v1/messages", ns, {{"X-data-parallel-rank", "3"}}).body);
  EXPECT_EQ(b.at("type").as_string(), "message");
  EXPECT_EQ(b.at("content").at(0).at("type").as_string(), "text");
  std::int64_t a_total =
      a.at("usage").at("input_tokens").as_int64() + a.at("usage").at("cache_read_input_tokens").as_int64();
  std::int64_t b_cached = b.at("usage").at("cache_read_input_tokens").as_int64();
  EXPECT_GT(b_cached, 0);
  EXPECT_EQ(b.at("usage").at("input_tokens").as_int64() + b_cached, a_total);
  // count_tokens
  auto ct = parse(c.post("/v1/messages/count_tokens", ns).body);
  EXPECT_EQ(ct.at("input_tokens").as_int64(), a_total);
}

TEST_F(SimServer, ResponsesStreamingAndNot) {
  Client c(port_);
  std::string body = R"({"model":"test-model","input":"Write a haiku","max_output_tokens":2)";
  auto r = c.post("/v1/responses", body + "}");
  ASSERT_EQ(r.status, 200u) << r.body;
  auto v = parse(r.body);
  EXPECT_EQ(v.at("object").as_string(), "response");
  // Capped by max_output_tokens (the instant preset's replies never end by themselves): incomplete.
  EXPECT_EQ(v.at("status").as_string(), "incomplete");
  EXPECT_EQ(v.at("incomplete_details").at("reason").as_string(), "max_output_tokens");
  EXPECT_EQ(v.at("usage").at("output_tokens").as_int64(), 2);
  EXPECT_TRUE(v.at("usage").at("input_tokens_details").at("cached_tokens").is_int64());
  auto s = c.post("/v1/responses", body + R"(,"stream":true})");
  auto events = test_support::parse_sse(s.body);
  std::vector<std::string> names;
  for (const auto& e : events) {
    names.push_back(e.event);
    EXPECT_EQ(parse(e.data).at("type").as_string(), e.event);
  }
  std::vector<std::string> expected{"response.created",           "response.in_progress",
                                    "response.output_item.added", "response.content_part.added",
                                    "response.output_text.delta", "response.output_text.delta",
                                    "response.output_text.done",  "response.content_part.done",
                                    "response.output_item.done",  "response.incomplete"};
  EXPECT_EQ(names, expected);
  auto done = parse(events.back().data);
  EXPECT_EQ(done.at("response").at("usage").at("output_tokens").as_int64(), 2);
  EXPECT_EQ(done.at("response").at("output").at(0).at("content").at(0).at("text"),
            v.at("output").at(0).at("content").at(0).at("text"));
}

TEST_F(SimServer, PinnedTurnsHitTheCacheOnlyOnTheirRank) {
  Client c(port_);
  std::string system(2000, 'q');
  auto body = [&](const std::string& user) {
    return json::serialize(
        json::object{{"model", kModel},
                     {"max_tokens", 2},
                     {"messages", json::array{json::object{{"role", "system"}, {"content", system}},
                                              json::object{{"role", "user"}, {"content", user}}}}});
  };
  std::int64_t prompt_tokens = 0;
  auto cached = [&](const std::string& b, const char* rank) {
    auto r = c.post("/v1/chat/completions", b, {{"x-data-parallel-rank", rank}});
    auto u = parse(r.body).at("usage");
    prompt_tokens = u.at("prompt_tokens").as_int64();
    return u.at("prompt_tokens_details").at("cached_tokens").as_int64();
  };
  auto hits_before = metric(c, "vllm:prefix_cache_hits_total");
  EXPECT_EQ(cached(body("first"), "1"), 0);
  std::int64_t second = cached(body("second"), "1");
  // The shared system prompt (all but the last few tokens and the partial block) is served from rank 1.
  EXPECT_GT(second, prompt_tokens - 32);
  EXPECT_EQ(second % 16, 0);                 // whole blocks only
  EXPECT_EQ(cached(body("third"), "0"), 0);  // rank 0 never saw it
  auto hits_after = metric(c, "vllm:prefix_cache_hits_total");
  EXPECT_EQ(hits_after["1"] - hits_before["1"], static_cast<double>(second));
  EXPECT_EQ(hits_after["0"], hits_before["0"]);
  // A non-integer pin is ignored (balanced), an out-of-range one is refused.
  EXPECT_EQ(c.post("/v1/chat/completions", body("x"), {{"X-Data-Parallel-Rank", "abc"}}).status, 200u);
  EXPECT_EQ(cached(body("second"), " +1 "), second);  // blanks and '+' are accepted, as Python's int()
  auto bad = c.post("/v1/chat/completions", body("x"), {{"X-data-parallel-rank", "4"}});
  EXPECT_EQ(bad.status, 400u);
  EXPECT_NE(parse(bad.body).at("error").at("message").as_string().find("out of range"), std::string::npos);
}

TEST_F(SimServer, MetricsExpositionHasVllmNamesTypesAndLabels) {
  Client c(port_);
  c.post("/v1/chat/completions", chat_body("warm up", 2));
  auto res = c.get("/metrics");
  ASSERT_EQ(res.status, 200u);
  warden::protocol::PromParser p;
  std::vector<warden::protocol::PromSample> samples;
  ASSERT_TRUE(p.feed(res.body, [&](const warden::protocol::PromSample& s) { samples.push_back(s); }));
  ASSERT_TRUE(p.finish([&](const warden::protocol::PromSample& s) { samples.push_back(s); }));
  EXPECT_EQ(p.stats().garbage_lines, 0u);
  using warden::protocol::PromType;
  EXPECT_EQ(p.type_of("vllm:num_requests_running"), PromType::gauge);
  EXPECT_EQ(p.type_of("vllm:num_requests_waiting"), PromType::gauge);
  EXPECT_EQ(p.type_of("vllm:kv_cache_usage_perc"), PromType::gauge);
  EXPECT_EQ(p.type_of("vllm:prefix_cache_queries_total"), PromType::counter);
  EXPECT_EQ(p.type_of("vllm:prefix_cache_hits_total"), PromType::counter);
  EXPECT_EQ(p.type_of("vllm:prompt_tokens_total"), PromType::counter);
  EXPECT_EQ(p.type_of("vllm:generation_tokens_total"), PromType::counter);
  EXPECT_EQ(p.type_of("vllm:time_to_first_token_seconds"), PromType::histogram);
  EXPECT_EQ(p.type_of("vllm:cache_config_info"), PromType::gauge);
  EXPECT_EQ(p.type_of("vllm:prompt_tokens_created"), PromType::gauge);
  std::map<std::string, int> per_engine;
  for (const auto& s : samples) {
    if (s.name.starts_with("vllm:")) {
      if (s.name != "vllm:cache_config_info") {  // vLLM's info gauge has no model_name
        EXPECT_EQ(s.label("model_name").value_or(""), kModel) << s.name;
      }
      ++per_engine[std::string(s.label("engine").value_or("none"))];
    }
  }
  EXPECT_EQ(per_engine.size(), 4u);  // engine="0".."3", nothing unlabelled
  // No model filter: cache_config_info has no model_name label (as in vLLM).
  auto vllm = warden::protocol::parse_vllm_metrics(res.body);
  ASSERT_TRUE(vllm.has_value());
  ASSERT_EQ(vllm->ranks.size(), 4u);
  for (const auto& r : vllm->ranks) {
    EXPECT_EQ(r.block_size, 16);
    EXPECT_EQ(r.num_gpu_blocks, 262144);  // the instant preset
    EXPECT_TRUE(r.num_requests_running.has_value());
    EXPECT_EQ(r.num_preemptions_total, 0.0);  // exported per rank, read by the warden's parser
    EXPECT_TRUE(r.prefix_cache_queries_total.has_value());
  }
  double ttft_count = 0;
  for (const auto& s : samples) {
    if (s.name == "vllm:time_to_first_token_seconds_count") {
      ttft_count += s.value;
    }
  }
  EXPECT_GE(ttft_count, 1.0);
}

TEST_F(SimServer, CountersOnlyGrow) {
  Client c(port_);
  auto names = {"vllm:prefix_cache_queries_total", "vllm:prompt_tokens_total",
                "vllm:generation_tokens_total"};
  std::map<std::string, std::map<std::string, double>> before;
  for (auto n : names) {
    before[n] = metric(c, n);
  }
  c.post("/v1/chat/completions", chat_body("counting", 5), {{"X-data-parallel-rank", "2"}});
  for (auto n : names) {
    auto after = metric(c, n);
    for (const auto& [engine, v] : before[n]) {
      EXPECT_GE(after[engine], v) << n << " engine " << engine;
    }
  }
  EXPECT_EQ(metric(c, "vllm:generation_tokens_total")["2"] - before["vllm:generation_tokens_total"]["2"],
            5.0);
}

TEST_F(SimServer, BadInputsGetVllmStyleErrors) {
  Client c(port_);
  auto check = [&](const std::string& path, const std::string& body, unsigned status,
                   bool anthropic = false) {
    auto r = c.post(path, body);
    EXPECT_EQ(r.status, status) << path << " " << body << " → " << r.body;
    auto v = parse(r.body);
    if (anthropic) {
      EXPECT_EQ(v.at("type").as_string(), "error");
      EXPECT_TRUE(v.at("error").at("message").is_string());
    } else {
      EXPECT_TRUE(v.at("error").at("message").is_string()) << r.body;
      EXPECT_EQ(v.at("error").at("code").as_int64(), status);
    }
  };
  check("/v1/chat/completions", "{not json", 400);
  check("/v1/chat/completions", "[1,2]", 400);
  check("/v1/chat/completions", R"({"model":"test-model"})", 400);  // no messages
  check("/v1/chat/completions", R"({"model":"other","messages":[{"role":"user","content":"x"}]})", 404);
  check("/v1/chat/completions",
        R"({"model":"test-model","messages":[{"role":"user","content":"x"}],"max_tokens":0})", 400);
  check("/v1/chat/completions",
        R"({"model":"test-model","messages":[{"role":"user","content":"x"}],"max_tokens":"many"})", 400);
  check("/v1/chat/completions",
        R"({"model":"test-model","messages":[{"role":"user","content":"x"}],"max_tokens":100000000})", 400);
  check("/v1/completions", R"({"model":"test-model"})", 400);
  check("/v1/messages", R"({"model":"test-model","messages":[{"role":"user","content":"x"}]})", 400, true);
  check("/v1/messages", R"({"model":"nope","max_tokens":1,"messages":[{"role":"user","content":"x"}]})", 404,
        true);
  check("/v1/messages", "{", 400, true);
  // vLLM's `priority`: an integer, and not 0 only where the engine schedules by priority (not here).
  const std::string chat_x =
      R"({"model":"test-model","max_tokens":1,"messages":[{"role":"user","content":"x"}])";
  check("/v1/chat/completions", chat_x + R"(,"priority":"high"})", 400);
  check("/v1/chat/completions", chat_x + R"(,"priority":1.5})", 400);
  check("/v1/chat/completions", chat_x + R"(,"priority":3})", 400);
  check("/v1/completions", R"({"model":"test-model","max_tokens":1,"prompt":"x","priority":-2})", 400);
  EXPECT_EQ(c.post("/v1/chat/completions", chat_x + R"(,"priority":0})").status, 200u);
  // Its Anthropic endpoint has no such field: ignored there, whatever it holds.
  EXPECT_EQ(c.post("/v1/messages", chat_x + R"(,"priority":"high"})").status, 200u);
  EXPECT_EQ(c.get("/v1/chat/completions").status, 405u);
  EXPECT_EQ(c.get("/nope").status, 404u);
  EXPECT_EQ(c.get("/health").status, 200u);
}

TEST_F(SimServer, RandomAndTruncatedBodiesNeverCrashTheServer) {
  Client c(port_);
  std::mt19937_64 rng(12345);
  std::vector<std::string> seeds{
      chat_body("fuzz me", 2, true, true),
      R"({"model":"test-model","max_tokens":2,"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]})",
      R"({"model":"test-model","input":[{"role":"user","content":[{"type":"input_text","text":"b"}]}]})",
      R"({"model":"test-model","prompt":[[1,2,3]],"max_tokens":1})"};
  std::vector<std::string> paths{"/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/completions",
                                 "/v1/messages/count_tokens"};
  int ok = 0;
  for (int i = 0; i < 300; ++i) {
    std::string body = seeds[rng() % seeds.size()];
    switch (rng() % 4) {
      case 0:
        body.resize(rng() % (body.size() + 1));  // truncated
        break;
      case 1:
        for (int k = 0; k < 3; ++k) {
          body[rng() % body.size()] = static_cast<char>(rng() % 256);  // corrupted bytes
        }
        break;
      case 2: {
        std::string junk(rng() % 200, '\0');
        for (auto& ch : junk) {
          ch = static_cast<char>(rng() % 256);
        }
        body = junk;
        break;
      }
      default:
        break;  // valid
    }
    auto r = c.raw().post(paths[rng() % paths.size()], body);
    ASSERT_TRUE(r.has_value()) << "request " << i << " failed: " << r.error().message();
    EXPECT_TRUE(r->status == 200 || r->status == 400 || r->status == 404) << r->status << " " << r->body;
    ok += r->status == 200;
  }
  EXPECT_GT(ok, 0);
  EXPECT_EQ(c.get("/health").status, 200u);
}

TEST(SimShutdown, SigtermWithAStreamInFlightExitsZero) {
  ChildProcess sim(sim_args({"--preset", "instant", "--time-scale", "0.01"}));
  int port = sim.wait_for_port();
  Client c(port);
  bool got_piece = false;
  std::thread stopper;
  auto r = c.raw().post("/v1/chat/completions", chat_body("never ending", 100000 / 100, true), {},
                        [&](std::string_view) {
                          if (!got_piece) {
                            got_piece = true;
                            stopper = std::thread([&] { sim.signal(SIGTERM); });
                          }
                          return true;
                        });
  if (stopper.joinable()) {
    stopper.join();
  }
  EXPECT_TRUE(got_piece);
  EXPECT_FALSE(r.has_value() && r->body.find("[DONE]") != std::string::npos);  // cut short, not completed
  auto code = sim.wait_exit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
}

TEST(SimLimits, BodyLimitAndModelLength) {
  ChildProcess sim(sim_args({"--preset", "instant", "--max-body-bytes", "4096", "--max-model-len", "64"}));
  int port = sim.wait_for_port();
  Client c(port);
  auto big = c.raw().post("/v1/chat/completions", chat_body(std::string(5000, 'x'), 1));
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->status, 413u);
  EXPECT_NE(big->body.find("\"error\""), std::string::npos);
  auto long_prompt = c.post("/v1/chat/completions", chat_body(std::string(1000, 'y') + " words and more", 1));
  EXPECT_EQ(long_prompt.status, 400u);
  EXPECT_NE(long_prompt.body.find("maximum context length is 64"), std::string::npos) << long_prompt.body;
  auto fits = c.post("/v1/chat/completions", chat_body("short", 60));  // prompt + 60 > 64
  EXPECT_EQ(fits.status, 400u);
  EXPECT_EQ(c.get("/health").status, 200u);
  EXPECT_EQ(sim.stop(), 0);
}

TEST(SimLimits, PrioritySchedulingAcceptsAnyIntegerPriority) {
  ChildProcess sim(sim_args({"--preset", "instant", "--scheduling-policy", "priority"}));
  Client c(sim.wait_for_port());
  const std::string chat_x =
      R"({"model":"test-model","max_tokens":1,"messages":[{"role":"user","content":"x"}])";
  EXPECT_EQ(c.post("/v1/chat/completions", chat_x + R"(,"priority":-7})").status, 200u);
  EXPECT_EQ(c.post("/v1/chat/completions", chat_x + R"(,"priority":1764670000000})").status, 200u);
  EXPECT_EQ(c.post("/v1/chat/completions", chat_x + R"(,"priority":"first"})").status, 400u);
  EXPECT_EQ(sim.stop(), 0);
  ChildProcess bad(sim_args({"--preset", "instant", "--scheduling-policy", "soonest"}));
  EXPECT_EQ(bad.wait_exit(std::chrono::seconds(20)), std::optional<int>(2));
}

// One seat (--max-num-seqs 1) taken by a long request; B (priority 5) then C (priority 1) queue behind it.
// Under priority scheduling C is admitted first and finishes first, though it came last.
TEST(SimLimits, PrioritySchedulingServesTheLowerPriorityFirst) {
  // 0.1 ms model steps at --time-scale 0.001: 0.1 s of wall time each, so A runs ~3 s.
  ChildProcess sim(sim_args({"--preset", "instant", "--scheduling-policy", "priority", "--max-num-seqs", "1",
                             "--time-scale", "0.001"}));
  const int port = sim.wait_for_port();
  Client watcher(port);
  const auto gauge = [&](const char* name) {
    const auto values = metric(watcher, name);
    return values.empty() ? -1.0 : values.begin()->second;
  };
  const auto body = [](const std::string& user, int max_tokens, int priority) {
    json::object o = json::parse(chat_body(user, max_tokens)).as_object();
    o["priority"] = priority;
    return json::serialize(o);
  };
  std::mutex mu;
  std::vector<std::string> finished;
  const auto send = [&](std::string name, std::string b) {
    return std::thread([&, name, b] {
      Client c(port);
      const auto r = c.post("/v1/chat/completions", b);
      EXPECT_EQ(r.status, 200u) << name << " " << r.body;
      const std::lock_guard lock(mu);
      finished.push_back(name);
    });
  };
  std::thread a = send("A", body("hold the only seat", 30, 3));
  ASSERT_TRUE(test_support::wait_until([&] { return gauge("vllm:num_requests_running") == 1; }));
  std::thread b = send("B", body("second in line", 1, 5));
  ASSERT_TRUE(test_support::wait_until([&] { return gauge("vllm:num_requests_waiting") == 1; }));
  std::thread c = send("C", body("third but urgent", 1, 1));
  const bool both_waiting = test_support::wait_until([&] { return gauge("vllm:num_requests_waiting") == 2; });
  a.join();
  b.join();
  c.join();
  ASSERT_TRUE(both_waiting) << "A finished before B and C were both queued";
  EXPECT_EQ(finished, (std::vector<std::string>{"A", "C", "B"}));
  EXPECT_EQ(sim.stop(), 0);
}

// --kv-offloading-size: a prompt the GPU cache evicted comes back from host memory (cached, and counted as
// vLLM's connector counts it); the same run without offload computes it again.
TEST(SimOffload, APromptTheGpuEvictedIsLoadedFromHostMemory) {
  const auto words = [](const char* stem, int n) {
    std::string text;
    for (int i = 0; i < n; ++i) {
      text += std::string(stem) + std::to_string(i) + " ";
    }
    return text;
  };
  const std::string a = chat_body(words("apple", 120), 1);
  const std::string b = chat_body(words("berry", 280), 1);  // 1,020 tokens: every GPU block, all of A's
  const auto run = [&](const char* offload_gib) {
    // 64 blocks of 16 tokens on the GPU; 1 GiB of host memory holds 455 of Qwen3-4B's.
    ChildProcess sim(sim_args({"--preset", "instant", "--num-gpu-blocks", "64", "--max-model-len", "1024",
                               "--kv-offloading-backend", "native", "--kv-offloading-size", offload_gib}));
    Client c(sim.wait_for_port());
    const auto cached = [&](const std::string& body) {
      const auto r = c.post("/v1/chat/completions", body);
      EXPECT_EQ(r.status, 200u) << r.body;
      return parse(r.body).at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64();
    };
    EXPECT_EQ(cached(a), 0);
    EXPECT_EQ(cached(b), 0);
    const std::int64_t again = cached(a);
    const auto loaded = metric(c, "vllm:external_prefix_cache_hits_total");
    EXPECT_EQ(metric(c, "vllm:prefix_cache_hits_total")["0"], 0.0);  // nothing of A was left on the GPU
    EXPECT_EQ(sim.stop(), 0);
    return std::pair{again, loaded.contains("0") ? loaded.at("0") : -1.0};
  };
  const auto [without, loaded_without] = run("0");
  EXPECT_EQ(without, 0);
  EXPECT_EQ(loaded_without, 0.0);
  const auto [with, loaded_with] = run("1");
  EXPECT_GT(with, 300);  // all of A's prompt but its last partial block
  EXPECT_EQ(loaded_with, static_cast<double>(with));
  // vLLM's other backends (LMCache, ...) are not modelled: refused, not ignored.
  ChildProcess other(sim_args({"--preset", "instant", "--kv-offloading-backend", "lmcache"}));
  const auto code = other.wait_exit(std::chrono::seconds(20));
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(*code, 0);
}

TEST(SimBalancing, OneConnectionSpreadsIdleRanksThenDisconnectFreesTheSlot) {
  // Slow model time: requests stay running long enough to observe, and one balancer view period lasts
  // 0.1 model s = 10 wall s at --time-scale 0.01.
  ChildProcess sim(sim_args({"--preset", "instant", "--data-parallel-size", "4", "--time-scale", "0.01"}));
  int port = sim.wait_for_port();
  Client watcher(port);
  auto queries_before = metric(watcher, "vllm:prefix_cache_queries_total");
  // One client connection = one balancer instance: its own assignments push it to the next idle rank.
  Client c(port);
  for (int i = 0; i < 4; ++i) {
    auto r = c.post("/v1/completions", R"({"model":"test-model","prompt":"spread )" + std::to_string(i) +
                                           R"(","max_tokens":1})");
    EXPECT_EQ(r.status, 200u);
  }
  auto queries_after = metric(watcher, "vllm:prefix_cache_queries_total");
  for (const char* engine : {"0", "1", "2", "3"}) {
    EXPECT_GT(queries_after[engine], queries_before[engine]) << "rank " << engine << " got no request";
  }
  auto waiting_or_running = [&] {
    auto run = metric(watcher, "vllm:num_requests_running");
    auto wait = metric(watcher, "vllm:num_requests_waiting");
    double total = 0;
    for (auto& [k, v] : run) {
      total += v + wait[k];
    }
    return total;
  };
  EXPECT_EQ(waiting_or_running(), 0.0);
  // Disconnect mid-stream: the running count on the pinned rank drops at once.
  Client streamer(port);
  std::atomic<bool> saw_running{false};
  auto res = streamer.post("/v1/chat/completions", chat_body("long story", 5000, true),
                           {{"X-data-parallel-rank", "2"}}, [&](std::string_view) {
                             saw_running = metric(watcher, "vllm:num_requests_running")["2"] == 1.0;
                             return false;  // hang up after the first piece
                           });
  EXPECT_TRUE(res.hung_up);
  EXPECT_TRUE(saw_running);
  EXPECT_TRUE(test_support::wait_until(
      [&] {
        auto m = metric(watcher, "vllm:num_requests_running");
        return m["2"] == 0.0;
      },
      10s));
  EXPECT_EQ(sim.stop(), 0);
}
