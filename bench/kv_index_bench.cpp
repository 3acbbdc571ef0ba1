// KV cache events, decode + index, beside the request path's own cost (issue 40, "Fast"), over a realistic
// stream (kv_stream.hpp: agent threads storing chained blocks with their session ids, an LRU's evictions):
//   BM_KvIngest       protocol::kv::decode then core::apply_events into a KvIndex in its steady state (the
//                     pool full): block hashes per second per core (every hash on the wire: each group's
//                     of a hybrid model, stores and removals);
//   BM_KvDecodeOnly, BM_KvApplyOnly   the two halves apart;
//   BM_RouteWithKv / BM_RouteWithoutKv   Router::route() + finish() at 7 replicas whose live indexes
//                     (ReplicaMetrics::kv) hold the agents' threads, and the same Router without them;
// then the ratio of the two routes, and the index's bytes per resident block at 100k and 1M blocks
// (KvIndex::stats().bytes, and the heap a copy of the index takes by mallinfo2).
//   ./build/bench/kv_index_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/kv_apply.hpp"
#include "core/router.hpp"
#include "kv_stream.hpp"

namespace {

namespace kv = warden::protocol::kv;
using warden::core::KvIndex;

struct Case {
  kv_stream::Shape shape;
  std::size_t events_per_batch = 64;  // one busy step of the rank
  std::size_t warm_batches = 0;       // applied before timing: the pool is full by then
  std::size_t timed_batches = 0;
};

// Dense, 16-token blocks: a 1.17M-token cache (73k blocks), 32 agents.
Case dense16() {
  Case c;
  c.shape.capacity_blocks = 73'000;
  c.warm_batches = 4'000;
  c.timed_batches = 4'000;
  return c;
}

// A hybrid model (one attention group, three GDN groups) with 1568-token blocks: 746 blocks.
Case hybrid1568() {
  Case c;
  c.shape.block_size = 1568;
  c.shape.mamba_groups = 3;
  c.shape.capacity_blocks = 746;
  c.shape.chunk_tokens = 8'192;
  c.events_per_batch = 16;
  c.warm_batches = 400;
  c.timed_batches = 400;
  return c;
}

std::size_t hashes_in(const kv::EventBatch& batch) {
  std::size_t n = 0;
  for (const kv::Event& e : batch.events) {
    if (const auto* s = std::get_if<kv::BlockStored>(&e)) {
      n += s->block_hashes.size();
    } else if (const auto* r = std::get_if<kv::BlockRemoved>(&e)) {
      n += r->block_hashes.size();
    }
  }
  return n;
}

// The stream's payloads past the warm-up, and the index the warm-up left.
struct Prepared {
  std::vector<std::string> payloads;
  std::vector<kv::EventBatch> decoded;
  std::vector<std::size_t> hashes;
  KvIndex warm;
};

const Prepared& prepared(const Case& c) {
  static std::map<std::uint32_t, std::unique_ptr<Prepared>> cache;
  auto& p = cache[c.shape.block_size];
  if (p) {
    return *p;
  }
  p = std::make_unique<Prepared>();
  auto all = kv_stream::batches(c.shape, c.warm_batches + c.timed_batches, c.events_per_batch);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i < c.warm_batches) {
      warden::core::apply_events(all[i], p->warm);
      continue;
    }
    p->payloads.push_back(kv::encode(all[i]));
    p->hashes.push_back(hashes_in(all[i]));
    p->decoded.push_back(*kv::decode(p->payloads.back()));
    all[i] = {};  // the tokens are in the payload only
  }
  return *p;
}

// Runs `step(i, index)` over the prepared batches in turn; at the end of the stream the index starts again
// from the warm-up's (untimed).
template <class Step>
void over_stream(benchmark::State& state, const Prepared& p, Step step) {
  KvIndex index = p.warm;
  std::size_t i = 0;
  double hashes = 0;
  std::int64_t bytes = 0;
  for (auto _ : state) {
    if (i == p.payloads.size()) {
      state.PauseTiming();
      index = p.warm;
      i = 0;
      state.ResumeTiming();
    }
    step(i, index);
    hashes += static_cast<double>(p.hashes[i]);
    bytes += static_cast<std::int64_t>(p.payloads[i].size());
    ++i;
  }
  state.SetBytesProcessed(bytes);
  state.counters["hashes/s"] = benchmark::Counter(hashes, benchmark::Counter::kIsRate);
  state.counters["blocks"] = static_cast<double>(index.stats().gpu_blocks);
}

void BM_KvIngest(benchmark::State& state, Case c) {
  const Prepared& p = prepared(c);
  over_stream(state, p, [&](std::size_t i, KvIndex& index) {
    const auto batch = kv::decode(p.payloads[i]);
    benchmark::DoNotOptimize(warden::core::apply_events(*batch, index));
  });
}
BENCHMARK_CAPTURE(BM_KvIngest, block16, dense16());
BENCHMARK_CAPTURE(BM_KvIngest, hybrid1568, hybrid1568());

void BM_KvDecodeOnly(benchmark::State& state, Case c) {
  const Prepared& p = prepared(c);
  over_stream(state, p, [&](std::size_t i, KvIndex&) {
    auto batch = kv::decode(p.payloads[i]);
    benchmark::DoNotOptimize(batch);
  });
}
BENCHMARK_CAPTURE(BM_KvDecodeOnly, block16, dense16());
BENCHMARK_CAPTURE(BM_KvDecodeOnly, hybrid1568, hybrid1568());

void BM_KvApplyOnly(benchmark::State& state, Case c) {
  const Prepared& p = prepared(c);
  over_stream(state, p, [&](std::size_t i, KvIndex& index) {
    benchmark::DoNotOptimize(warden::core::apply_events(p.decoded[i], index));
  });
}
BENCHMARK_CAPTURE(BM_KvApplyOnly, block16, dense16());
BENCHMARK_CAPTURE(BM_KvApplyOnly, hybrid1568, hybrid1568());

// 7 replicas, each with its rank's stream in steady state (the same start on all), and a Router that has
// routed each of their threads once; `kv`: the Router reads the indexes, else its estimate alone.
struct Fleet {
  static constexpr std::size_t replicas = 7;
  static constexpr std::uint64_t start_digest = 0x5743a1d2e3f40011ULL;
  std::vector<KvIndex> indexes{replicas};
  std::vector<kv_stream::Stream::Thread> threads;  // every replica's, in order
  std::vector<warden::core::ReplicaMetrics> metrics{replicas};
  warden::core::Router router;
  warden::core::SplitMixRng rng{5};
  warden::core::Time now{0};
  bool kv = false;

  explicit Fleet(bool with_kv) : kv(with_kv) {
    Case c = dense16();
    c.shape.token_ids = false;  // not encoded here: applied as decoded
    for (std::size_t r = 0; r < replicas; ++r) {
      c.shape.seed = r + 1;
      kv_stream::Stream stream(c.shape);
      for (std::size_t b = 0; b < c.warm_batches; ++b) {
        kv::EventBatch batch;
        stream.next(batch, c.events_per_batch);
        warden::core::apply_events(batch, indexes[r]);
      }
      const auto mine = stream.threads();
      threads.insert(threads.end(), mine.begin(), mine.end());
      metrics[r].kv_capacity_tokens = c.shape.capacity_blocks * c.shape.block_size;
      metrics[r].kv_usage = 0.9;
      metrics[r].scrape_generation = 1;
      metrics[r].kv = with_kv ? &indexes[r] : nullptr;
    }
    warden::core::RoutingConfig routing;
    routing.max_num_seqs = 32;
    router.set_routing(routing);
    for (std::size_t i = 0; i < threads.size(); ++i) {
      route(i);
    }
  }

  void route(std::size_t i) {
    warden::core::RequestFacts f;
    f.session = warden::core::SessionKey{threads[i].key};
    f.thread.start = start_digest;
    f.thread.long_start = true;
    f.offers_tools = true;
    f.prompt_tokens = static_cast<std::uint32_t>(threads[i].prompt_tokens);
    now += std::chrono::microseconds(1);
    const auto d = router.route(f, metrics, now, rng);
    if (kv) {
      indexes[*d.replica].sent(threads[i].key, d.thread_anew);  // as the gateway tells the replica's feed
    }
    router.finish(*d.replica);
  }
};

void BM_Route(benchmark::State& state, bool with_kv) {
  Fleet fleet(with_kv);
  warden::core::SplitMixRng pick(9);
  for (auto _ : state) {
    fleet.route(pick.uniform(fleet.threads.size()));
  }
}
BENCHMARK_CAPTURE(BM_Route, with_kv, true);
BENCHMARK_CAPTURE(BM_Route, without_kv, false);

// The heap a copy of `index` takes (mallinfo2: what the allocator handed out), per resident GPU block.
double heap_per_block(const KvIndex& index) {
  const auto before = mallinfo2().uordblks;
  const auto copy = std::make_unique<KvIndex>(index);
  const auto after = mallinfo2().uordblks;
  return static_cast<double>(after - before) / static_cast<double>(index.stats().gpu_blocks);
}

void print_bytes_per_block(std::size_t resident) {
  Case c = dense16();
  c.shape.token_ids = false;
  c.shape.capacity_blocks = resident;
  c.shape.agents = 256;
  kv_stream::Stream stream(c.shape);
  KvIndex index;
  // Past the fill, as many blocks again: the pool turned over once, as in steady state.
  for (std::size_t stored = 0; stream.resident_blocks() < resident || stored < 2 * resident;) {
    kv::EventBatch batch;
    stream.next(batch, c.events_per_batch);
    stored += warden::core::apply_events(batch, index).stored_blocks;
  }
  const auto s = index.stats();
  std::printf(
      "KvIndex at %zu resident blocks (16 tokens, %llu threads, %llu chains): %.1f bytes/block by "
      "stats().bytes, %.1f by the heap a copy takes\n",
      static_cast<std::size_t>(s.gpu_blocks), static_cast<unsigned long long>(s.threads),
      static_cast<unsigned long long>(s.chains),
      static_cast<double>(s.bytes) / static_cast<double>(s.gpu_blocks), heap_per_block(index));
}

// Keeps each benchmark's CPU time (the median's, with repetitions) for the ratio printed at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.aggregate_name.empty() || r.aggregate_name == "median") {
        cpu_ns_[r.run_name.str()] = r.GetAdjustedCPUTime();
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double ns(const std::string& name) const {
    const auto it = cpu_ns_.find(name);
    return it == cpu_ns_.end() ? 0 : it->second;
  }

 private:
  std::map<std::string, double> cpu_ns_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    return 1;
  }
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const double with_kv = reporter.ns("BM_Route/with_kv");
  const double without_kv = reporter.ns("BM_Route/without_kv");
  if (with_kv > 0 && without_kv > 0) {
    std::printf("\nRouter::route at 7 replicas: %.0f ns with live indexes, %.0f ns without: %.2fx\n", with_kv,
                without_kv, with_kv / without_kv);
  }
  for (const std::size_t resident : {100'000UL, 1'000'000UL}) {
    print_bytes_per_block(resident);
  }
  return 0;
}
