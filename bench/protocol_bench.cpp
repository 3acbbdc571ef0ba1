// Protocol codecs: session-id extraction from a large Claude-Code-like body, Prometheus parsing of a
// 4-rank vLLM scrape, SSE parsing throughput, body rewrite, whether a turn starts an agent task. A full
// Boost.JSON DOM parse of the same body runs side by side as the reference.
//   ./build/bench/protocol_bench --benchmark_repetitions=10 --benchmark_report_aggregates_only=true

#include "protocol/prometheus.hpp"
#include "protocol/request.hpp"
#include "protocol/rewrite.hpp"
#include "protocol/sse.hpp"
#include "protocol/task_start.hpp"
#include "protocol/usage.hpp"

#include "../tests/protocol/samples.hpp"

#include <benchmark/benchmark.h>
#include <boost/json.hpp>

#include <string>
#include <vector>

namespace {

using namespace warden::protocol;

// About 200 KB: long system prompt, 8 tools with long descriptions, 20 turns of history.
const std::string& claude_body(samples::ClaudeMetadata metadata) {
  static std::string bodies[3];
  std::string& b = bodies[static_cast<int>(metadata)];
  if (b.empty()) {
    samples::ClaudeOptions o;
    o.metadata = metadata;
    o.system_bytes = 24'000;
    o.tool_bytes = 6'000;
    o.first_user_bytes = 8'000;
    o.turn_bytes = 2'400;
    o.turns = 24;
    b = samples::claude_code_body(o);
  }
  return b;
}

// The same with Claude Code's billing line as its first system block.
const std::string& claude_billing_body() {
  static std::string b;
  if (b.empty()) {
    samples::ClaudeOptions o;
    o.system_bytes = 24'000;
    o.tool_bytes = 6'000;
    o.first_user_bytes = 8'000;
    o.turn_bytes = 2'400;
    o.turns = 24;
    o.billing = "x-anthropic-billing-header: cc_version=2.1.332.0b8; cc_entrypoint=sdk-cli;";
    b = samples::claude_code_body(o);
  }
  return b;
}

void run_inspect_body(benchmark::State& state, const std::string& body, bool header) {
  std::vector<HeaderField> headers = {{"anthropic-version", "2023-06-01"}, {"x-app", "cli"}};
  if (header) {
    headers.push_back({"X-Claude-Code-Session-Id", "0f6b8f9e-3c1e-4a7a-9d7e-2b1c5e8f4a10"});
  }
  for (auto _ : state) {
    auto r = inspect_request(ApiKind::anthropic_messages, HeaderLookup{headers}, body);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
  state.counters["body_KB"] = static_cast<double>(body.size()) / 1024.0;
}

void run_inspect(benchmark::State& state, samples::ClaudeMetadata metadata, bool header) {
  run_inspect_body(state, claude_body(metadata), header);
}

void BM_SessionId_Claude200KB_Header(benchmark::State& s) {
  run_inspect(s, samples::ClaudeMetadata::json_string, true);
}
void BM_SessionId_Claude200KB_Header_Billing(benchmark::State& s) {
  run_inspect_body(s, claude_billing_body(), true);
}
void BM_SessionId_Claude200KB_Metadata(benchmark::State& s) {
  run_inspect(s, samples::ClaudeMetadata::json_string, false);
}
void BM_SessionId_Claude200KB_Fingerprint(benchmark::State& s) {
  run_inspect(s, samples::ClaudeMetadata::none, false);
}

// Reference: what a DOM parse of the same body costs (what the inspector avoids).
void BM_Reference_DomParse200KB(benchmark::State& state) {
  const std::string& body = claude_body(samples::ClaudeMetadata::json_string);
  for (auto _ : state) {
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec);
    benchmark::DoNotOptimize(v);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}

// Whether a 200 KB turn starts an agent task, on the gateway's path: the layout comes from inspect_request's
// pass and only the last message is parsed (BM_Reference_DomParse200KB is what parsing the body costs).
void BM_TaskStart_Claude200KB(benchmark::State& state) {
  const std::string& body = claude_body(samples::ClaudeMetadata::json_string);
  const auto layout = scan_layout(body);
  for (auto _ : state) {
    benchmark::DoNotOptimize(starts_task(ApiKind::anthropic_messages, body, *layout));
  }
  state.counters["body_KB"] = static_cast<double>(body.size()) / 1024.0;
}

// The gateway's path: the layout comes from inspect_request's pass, the rewrite itself is the splice.
void run_rewrite(benchmark::State& state, ApiKind api, const std::string& body) {
  const std::vector<HeaderField> none;
  const BodyLayout layout = inspect_request(api, HeaderLookup{none}, body)->layout;
  for (auto _ : state) {
    auto r = rewrite_request(api, body, layout, RewriteOptions{"Qwen/Qwen3-4B-Instruct-2507", true});
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}

void BM_Rewrite_Claude200KB_Model(benchmark::State& state) {
  run_rewrite(state, ApiKind::anthropic_messages, claude_body(samples::ClaudeMetadata::json_string));
}

// What the gateway adds by default for Claude Code: the output cap that fits the context and the billing
// block dropped (both in the same splice), and the prompt-start digest for prefix breaks.
void BM_Rewrite_Claude200KB_FitNormalize(benchmark::State& state) {
  const std::string& body = claude_billing_body();
  const std::vector<HeaderField> none;
  const BodyLayout layout = inspect_request(ApiKind::anthropic_messages, HeaderLookup{none}, body)->layout;
  RewriteOptions o{"Qwen/Qwen3-4B-Instruct-2507", true};
  o.max_tokens_cap = 4096;
  o.drop_billing = true;
  for (auto _ : state) {
    auto r = rewrite_request(ApiKind::anthropic_messages, body, layout, o);
    auto start = prompt_start(body, layout, true);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(start);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}

// The fixed cost per request: the small streamed chat request gateway_bench sends, with and without a
// session header (without one the prompt is fingerprinted).
const std::string kSmallChat =
    R"({"model":"bench","max_tokens":4,"stream":true,"messages":[{"role":"system","content":"You are a )"
    R"(coding agent with a long system prompt."},{"role":"user","content":"question 7"}]})";

void run_small_inspect(benchmark::State& state, bool header) {
  std::vector<HeaderField> headers = {{"content-type", "application/json"}, {"host", "127.0.0.1:8080"}};
  if (header) {
    headers.push_back({"X-Warden-Session", "lat-7"});
  }
  for (auto _ : state) {
    auto r = inspect_request(ApiKind::openai_chat, HeaderLookup{headers}, kSmallChat);
    benchmark::DoNotOptimize(r);
  }
}
void BM_Inspect_SmallChat_Header(benchmark::State& s) {
  run_small_inspect(s, true);
}
void BM_Inspect_SmallChat_Fingerprint(benchmark::State& s) {
  run_small_inspect(s, false);
}
void BM_Rewrite_SmallChat(benchmark::State& state) {
  run_rewrite(state, ApiKind::openai_chat, kSmallChat);
}

// A vLLM /metrics body for DP=4: the gauges and counters the warden reads, their _created companions,
// cache_config_info, and the histograms vLLM also exports (which the scraper must wade through).
std::string vllm_scrape(int ranks) {
  std::string t;
  const char* gauges[] = {"num_requests_running", "num_requests_waiting", "kv_cache_usage_perc"};
  const char* counters[] = {"prefix_cache_queries", "prefix_cache_hits", "prompt_tokens",
                            "generation_tokens",    "num_preemptions",   "request_success"};
  const char* histograms[] = {"time_to_first_token_seconds", "e2e_request_latency_seconds",
                              "request_prompt_tokens", "inter_token_latency_seconds",
                              "request_queue_time_seconds"};
  for (const char* g : gauges) {
    t += std::string("# HELP vllm:") + g + " Some help text.\n# TYPE vllm:" + g + " gauge\n";
    for (int e = 0; e < ranks; ++e) {
      t += std::string("vllm:") + g + "{engine=\"" + std::to_string(e) +
           "\",model_name=\"Qwen/Qwen3-4B-Instruct-2507\"} " + std::to_string(e * 1.5) + "\n";
    }
  }
  for (const char* c : counters) {
    t += std::string("# HELP vllm:") + c + "_total Some help text.\n# TYPE vllm:" + c + "_total counter\n";
    for (int e = 0; e < ranks; ++e) {
      const std::string labels =
          "{engine=\"" + std::to_string(e) + "\",model_name=\"Qwen/Qwen3-4B-Instruct-2507\"}";
      t += std::string("vllm:") + c + "_total" + labels + " 1.234567e+06\n";
      t += std::string("vllm:") + c + "_created" + labels + " 1.7646e+09\n";
    }
  }
  for (const char* h : histograms) {
    t += std::string("# HELP vllm:") + h + " Histogram.\n# TYPE vllm:" + h + " histogram\n";
    for (int e = 0; e < ranks; ++e) {
      for (const char* le :
           {"0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1",  "0.25", "0.5",
            "0.75",  "1.0",   "2.5",  "5.0",  "7.5",  "10.0", "20.0", "40.0", "80.0", "+Inf"}) {
        t += std::string("vllm:") + h + "_bucket{engine=\"" + std::to_string(e) + "\",le=\"" + le +
             "\",model_name=\"Qwen/Qwen3-4B-Instruct-2507\"} 42.0\n";
      }
      const std::string labels =
          "{engine=\"" + std::to_string(e) + "\",model_name=\"Qwen/Qwen3-4B-Instruct-2507\"}";
      t += std::string("vllm:") + h + "_count" + labels + " 42.0\n";
      t += std::string("vllm:") + h + "_sum" + labels + " 12.5\n";
    }
  }
  t += "# TYPE vllm:cache_config_info gauge\n";
  for (int e = 0; e < ranks; ++e) {
    t += "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"True\","
         "engine=\"" +
         std::to_string(e) +
         "\",gpu_memory_utilization=\"0.9\",num_gpu_blocks=\"2500\",num_cpu_blocks=\"None\"} 1.0\n";
  }
  return t;
}

void BM_Prometheus_VllmScrape_4Ranks(benchmark::State& state) {
  const std::string text = vllm_scrape(4);
  for (auto _ : state) {
    auto r = parse_vllm_metrics(text, "Qwen/Qwen3-4B-Instruct-2507");
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.counters["scrape_KB"] = static_cast<double>(text.size()) / 1024.0;
}

// An OpenAI chat stream of ~1 MB, fed in TCP-sized fragments.
std::string openai_stream() {
  std::string s;
  while (s.size() < (1u << 20)) {
    s +=
        R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764400000,"model":"qwen","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]})";
    s += "\n\n";
  }
  s += "data: [DONE]\n\n";
  return s;
}

void run_sse(benchmark::State& state, bool raw, bool track,
             StreamUsageTracker::Mode mode = StreamUsageTracker::Mode::full) {
  const std::string stream = openai_stream();
  const std::size_t fragment = static_cast<std::size_t>(state.range(0));
  std::int64_t events = 0;
  for (auto _ : state) {
    SseLimits limits;
    limits.capture_raw = raw;
    SseParser p(limits);
    StreamUsageTracker tracker(ApiKind::openai_chat, mode);
    for (std::size_t pos = 0; pos < stream.size(); pos += fragment) {
      auto r = p.feed(std::string_view(stream).substr(pos, fragment), [&](const SseEvent& e) {
        ++events;
        if (track) {
          benchmark::DoNotOptimize(tracker.on_event(e.event, e.data));
        }
      });
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * stream.size()));
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

void BM_Sse_Parse(benchmark::State& s) {
  run_sse(s, false, false);
}
void BM_Sse_ParseCaptureRaw(benchmark::State& s) {
  run_sse(s, true, false);
}
void BM_Sse_ParseAndTrackUsage(benchmark::State& s) {
  run_sse(s, false, true);
}
void BM_Sse_ParseAndTrackUsageFast(benchmark::State& s) {
  run_sse(s, false, true, StreamUsageTracker::Mode::fast);
}

}  // namespace

BENCHMARK(BM_SessionId_Claude200KB_Header)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SessionId_Claude200KB_Header_Billing)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SessionId_Claude200KB_Metadata)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SessionId_Claude200KB_Fingerprint)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Reference_DomParse200KB)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TaskStart_Claude200KB)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Rewrite_Claude200KB_Model)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Rewrite_Claude200KB_FitNormalize)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Inspect_SmallChat_Header);
BENCHMARK(BM_Inspect_SmallChat_Fingerprint);
BENCHMARK(BM_Rewrite_SmallChat);
BENCHMARK(BM_Prometheus_VllmScrape_4Ranks)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sse_Parse)->Arg(1460)->Arg(16384)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sse_ParseCaptureRaw)->Arg(1460)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sse_ParseAndTrackUsage)->Arg(1460)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sse_ParseAndTrackUsageFast)->Arg(1460)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
