// Cost of the workload and report code on the bench's and simulate's hot paths: generating a session's text
// (sized with the engine tokenizer), rendering a request body, and the recorder's row.
#include <benchmark/benchmark.h>

#include "report/report.hpp"
#include "report/svg.hpp"
#include "workload/closed_loop.hpp"
#include "workload/workload.hpp"

namespace {

using namespace warden;

void BM_StartSession(benchmark::State& state) {
  const workload::Workload w(workload::WorkloadConfig{});
  std::uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(w.start_session(i++));
  }
  state.counters["tokens/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(w.config().first_tokens),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_StartSession);

workload::Conversation last_turn(const workload::Workload& w) {
  workload::Conversation c = w.start_session(1);
  while (!w.is_last_turn(c)) {
    w.add_reply(c, w.synthetic_reply(c, 256));
    w.next_turn(c);
  }
  return c;
}

void BM_RenderAnthropicLastTurn(benchmark::State& state) {
  const workload::Workload w(workload::WorkloadConfig{});
  const workload::Conversation c = last_turn(w);
  std::size_t bytes = 0;
  for (auto _ : state) {
    const workload::HttpRequestSpec spec = workload::render_anthropic(w, c, "qwen3-4b-dp4");
    bytes += spec.body.size();
    benchmark::DoNotOptimize(spec);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_RenderAnthropicLastTurn);

void BM_RenderOpenAiLastTurn(benchmark::State& state) {
  const workload::Workload w(workload::WorkloadConfig{});
  const workload::Conversation c = last_turn(w);
  std::size_t bytes = 0;
  for (auto _ : state) {
    const workload::HttpRequestSpec spec = workload::render_openai(w, c, "qwen3-4b-dp4");
    bytes += spec.body.size();
    benchmark::DoNotOptimize(spec);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_RenderOpenAiLastTurn);

// One 3-minute level at 32 sessions worth of records (about 600 requests) into a row.
void BM_LevelRow(benchmark::State& state) {
  report::LevelRecorder rec("on", 32);
  rec.begin(0.0);
  for (int i = 0; i < 600; ++i) {
    report::RequestRecord r;
    r.started_at = i * 0.3;
    r.ended_at = i * 0.3 + 5.0;
    r.ttfb = 0.1 + (i % 97) * 0.37;
    r.output_tokens = 256;
    r.turn = static_cast<std::size_t>(i % 6);
    r.session_finished = i % 6 == 5;
    r.route = "sticky";
    rec.record(r);
  }
  rec.end(180.0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(rec.row());
  }
}
BENCHMARK(BM_LevelRow);

void BM_ReferenceSvg(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(report::ttfb_svg(report::reference_rows()));
  }
}
BENCHMARK(BM_ReferenceSvg);

}  // namespace

BENCHMARK_MAIN();
