// vLLM's KV cache event payloads: decoding one busy step's batch (32 stores of 32 blocks of 16 tokens, and
// 8 evictions of 64 blocks: 1,536 block hashes, 16,384 token ids) in each encoding, and encoding it.
// Reports block hashes decoded per second.
//   ./build/bench/kv_events_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "base/splitmix.hpp"
#include "protocol/kv_events.hpp"

namespace {

using namespace warden::protocol::kv;

EventBatch busy_step() {
  warden::base::SplitMix64 rng(7);
  EventBatch b;
  b.ts = 1757500000.25;
  b.data_parallel_rank = 2;
  for (int e = 0; e < 32; ++e) {
    BlockStored s;
    for (int i = 0; i < 32; ++i) {
      s.block_hashes.push_back(rng.next());
    }
    s.parent_block_hash = rng.next();
    for (int t = 0; t < 32 * 16; ++t) {
      s.token_ids.push_back(static_cast<std::uint32_t>(rng.next() % 151'000));
    }
    s.block_size = 16;
    s.group_idx = 0;
    s.session_id = session_id_of(rng.next());
    b.events.emplace_back(std::move(s));
  }
  for (int e = 0; e < 8; ++e) {
    BlockRemoved r;
    for (int i = 0; i < 64; ++i) {
      r.block_hashes.push_back(rng.next());
    }
    r.group_idx = 0;
    b.events.emplace_back(std::move(r));
  }
  return b;
}

constexpr double kHashesPerBatch = 32 * 32 + 8 * 64;

void BM_KvDecode(benchmark::State& state, Encoding encoding) {
  const std::string payload = encode(busy_step(), encoding);
  for (auto _ : state) {
    auto r = decode(payload);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * payload.size()));
  state.counters["hashes/s"] = benchmark::Counter(kHashesPerBatch * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_KvDecode, tagged_map, Encoding::tagged_map);
BENCHMARK_CAPTURE(BM_KvDecode, array, Encoding::array);

void BM_KvEncode(benchmark::State& state) {
  const EventBatch batch = busy_step();
  for (auto _ : state) {
    auto s = encode(batch);
    benchmark::DoNotOptimize(s);
  }
  state.counters["hashes/s"] = benchmark::Counter(kHashesPerBatch * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_KvEncode);

}  // namespace

BENCHMARK_MAIN();
