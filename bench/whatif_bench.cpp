// What-if driver speed: the full reference comparison (5 levels x 3 model-minutes x 2 policies = 30
// model-minutes) and the prompt rendering it depends on, full template render vs incremental, side by side.
// Prints model seconds per wall second. Target: the comparison in under 5 s on one core.
// Run: build/whatif_bench [--benchmark_repetitions=3]
#include <benchmark/benchmark.h>

#include <chrono>

#include "whatif/calibration.hpp"
#include "whatif/driver.hpp"
#include "whatif/prompt.hpp"

namespace {

using namespace warden;

void BM_ReferenceComparison(benchmark::State& state) {
  const whatif::SimulationConfig config = whatif::reference_setup();
  double model = 0;
  double wall = 0;
  std::uint64_t steps = 0;
  std::uint64_t requests = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto outcome = whatif::simulate(config);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    if (!outcome) {
      state.SkipWithError(outcome.error().c_str());
      return;
    }
    model += outcome->model_seconds;
    wall += seconds;
    steps += outcome->engine_steps;
    for (const auto& l : outcome->levels) {
      requests += l.requests;
    }
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["model_s"] = model / n;
  state.counters["wall_s"] = wall / n;
  state.counters["model_per_wall"] = model / wall;
  state.counters["engine_steps"] = static_cast<double>(steps) / n;
  state.counters["us_per_step"] = wall * 1e6 / static_cast<double>(steps);
  state.counters["requests"] = static_cast<double>(requests) / n;
}
BENCHMARK(BM_ReferenceComparison)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(2);

void BM_PromptFullRenderEveryTurn(benchmark::State& state) {
  const workload::Workload w(workload::WorkloadConfig{});
  workload::Conversation c = w.start_session(0);
  std::vector<workload::Conversation> turns;
  turns.push_back(c);
  while (!w.is_last_turn(c)) {
    w.add_reply(c, w.synthetic_reply(c, 256));
    w.next_turn(c);
    turns.push_back(c);
  }
  std::size_t tokens = 0;
  for (auto _ : state) {
    for (const auto& t : turns) {
      auto p = whatif::render_full(w, t);
      tokens += p ? p->size() : 0;
    }
  }
  state.counters["prompt_tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PromptFullRenderEveryTurn)->Unit(benchmark::kMillisecond);

void BM_PromptIncrementalEveryTurn(benchmark::State& state) {
  const workload::Workload w(workload::WorkloadConfig{});
  workload::Conversation c = w.start_session(0);
  std::vector<workload::Conversation> turns;
  turns.push_back(c);
  while (!w.is_last_turn(c)) {
    w.add_reply(c, w.synthetic_reply(c, 256));
    w.next_turn(c);
    turns.push_back(c);
  }
  std::size_t tokens = 0;
  for (auto _ : state) {
    whatif::IncrementalPrompt inc;
    for (const auto& t : turns) {
      auto p = inc.render(w, t);
      tokens += p ? p->size() : 0;
    }
  }
  state.counters["prompt_tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PromptIncrementalEveryTurn)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
