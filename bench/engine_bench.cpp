// Engine model costs: how many steps per second one core can drive (the sim server must keep ahead of a
// scaled clock) and the per-request admission cost of a long prompt.
//
//   build-engine/bench/engine_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <boost/json.hpp>

#include <string>
#include <vector>

#include "engine/chat_template.hpp"
#include "engine/engine.hpp"
#include "engine/presets.hpp"
#include "engine/tokenizer.hpp"

#include "../tests/engine/seq.hpp"

namespace {

using namespace warden::engine;
using warden::engine::test::seq;

// a4000 step-time model, but a cache large enough for 32 sequences of 10k+ tokens each so the batch stays
// full for the whole run (the real preset holds 40k tokens; this measures bookkeeping at the largest batch).
EngineConfig big_a4000() {
  EngineConfig c = *find_preset("a4000-qwen3-4b");
  c.num_gpu_blocks = 400000;
  c.max_model_len = 4'000'000;
  return c;
}

// 4 engines x 32 running sequences of 10k-13k context, decoding. One iteration = one step of each engine.
void BM_EngineStep4x32(benchmark::State& state) {
  std::vector<Engine> engines;
  std::vector<double> now(4, 0.0);
  for (int e = 0; e < 4; ++e) {
    engines.emplace_back(big_a4000(), 7);
    for (RequestId id = 0; id < 32; ++id) {
      RequestSpec spec;
      spec.id = id;
      spec.prompt = seq(1000, 10000);
      spec.prompt[0] = static_cast<TokenId>(50000 + id + 100 * e);  // distinct from block 0: no sharing
      spec.max_tokens = 1'000'000;
      if (!engines.back().add_request(std::move(spec))) {
        state.SkipWithError("add_request failed");
        return;
      }
    }
    // Prefill everything before timing (32 x 10k tokens in 2048-token steps), until all 32 decode.
    for (std::size_t emitted = 0; emitted < 32;) {
      const StepResult r = engines.back().step(now[e]);
      now[e] += r.duration;
      emitted = r.events.size();
    }
  }
  double virtual_s = 0;
  std::size_t events = 0;
  for (auto _ : state) {
    for (int e = 0; e < 4; ++e) {
      const StepResult r = engines[e].step(now[e]);
      now[e] += r.duration;
      virtual_s += r.duration;
      events += r.events.size();
    }
  }
  const double steps = 4.0 * static_cast<double>(state.iterations());
  state.counters["steps_per_s"] = benchmark::Counter(steps, benchmark::Counter::kIsRate);
  state.counters["virtual_ms_per_step"] = 1000.0 * virtual_s / steps;
  state.counters["tokens_per_step"] = static_cast<double>(events) / steps;
  state.SetItemsProcessed(static_cast<std::int64_t>(steps));
}
BENCHMARK(BM_EngineStep4x32)->Unit(benchmark::kMicrosecond)->Iterations(3000);

// add_request of a 12k-token prompt whose first 11.6k tokens are cached, plus the step that admits it
// (prefix lookup, block acquisition) and an abort to restore the state.
void BM_AddRequestWithPrefixLookup12k(benchmark::State& state) {
  Engine engine(*find_preset("a4000-qwen3-4b"), 7);
  const Tokens history = seq(5000, 11600);
  {
    RequestSpec warm;
    warm.id = 1;
    warm.prompt = history;
    warm.max_tokens = 1;
    (void)engine.add_request(std::move(warm));
    double now = 0;
    while (engine.has_work()) {
      now += engine.step(now).duration;
    }
  }
  Tokens prompt = history;
  const Tokens added = seq(90000, 400);
  prompt.insert(prompt.end(), added.begin(), added.end());
  RequestId id = 2;
  std::size_t cached = 0;
  for (auto _ : state) {
    RequestSpec spec;
    spec.id = id;
    spec.prompt = prompt;
    spec.max_tokens = 256;
    (void)engine.add_request(std::move(spec));
    engine.step(0);  // admits it: lookup + blocks for the 400 new tokens
    cached = engine.cached_prefix_tokens(prompt);
    engine.abort(id);
    ++id;
  }
  state.counters["cached_tokens"] = static_cast<double>(cached);
}
BENCHMARK(BM_AddRequestWithPrefixLookup12k)->Unit(benchmark::kMicrosecond);

// Cost of the prefix lookup alone (hash 750 blocks, walk the cache).
void BM_CachedPrefixTokens12k(benchmark::State& state) {
  Engine engine(*find_preset("a4000-qwen3-4b"), 7);
  const Tokens prompt = seq(5000, 12000);
  for (auto _ : state) {
    benchmark::DoNotOptimize(engine.cached_prefix_tokens(prompt));
  }
}
BENCHMARK(BM_CachedPrefixTokens12k)->Unit(benchmark::kMicrosecond);

// Rendering a ~12k-token chat request body (what the sim does per request before add_request).
void BM_RenderChat12k(benchmark::State& state) {
  std::string text;
  const char* words[] = {" the",   " cache",  " replica", " session",
                         " token", " prefix", " request", " engine"};
  for (int i = 0; text.size() < 48000; ++i) {
    text += words[(i * 7 + i / 3) % 8];
    if (i % 12 == 11) {
      text += ".";
    }
  }
  boost::json::object body{{"model", "m"}};
  body["messages"] =
      boost::json::array{boost::json::object{{"role", "system"}, {"content", text.substr(0, 14000)}},
                         boost::json::object{{"role", "user"}, {"content", text.substr(14000)}}};
  const std::string raw = boost::json::serialize(body);
  std::size_t n = 0;
  for (auto _ : state) {
    auto r = render_prompt(ApiKind::chat_completions, std::string_view(raw));
    n = r ? r->size() : 0;
    benchmark::DoNotOptimize(n);
  }
  state.counters["prompt_tokens"] = static_cast<double>(n);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * raw.size()));
}
BENCHMARK(BM_RenderChat12k)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
