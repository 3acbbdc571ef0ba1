#include "engine/engine.hpp"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <tuple>

#include "base/splitmix.hpp"
#include "engine/cache_layout.hpp"
#include "engine/config_check.hpp"
#include "engine/kv_event_log.hpp"

namespace warden::engine {

namespace {

constexpr std::array<double, 22> kTtftBuckets{0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                              0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                              20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};

std::uint64_t prompt_seed(std::uint64_t seed, const Tokens& prompt) {
  // Ids are hashed as little-endian 32-bit values so every host agrees.
  std::string bytes;
  bytes.reserve(prompt.size() * 4);
  for (TokenId t : prompt) {
    for (int i = 0; i < 4; ++i) {
      bytes.push_back(static_cast<char>((t >> (8 * i)) & 0xffU));
    }
  }
  return XXH64(bytes.data(), bytes.size(), seed);
}

std::uint32_t ceil_div(std::uint64_t a, std::uint32_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

}  // namespace

std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::length:
      return "length";
    case FinishReason::stop:
      return "stop";
    case FinishReason::abort:
      return "abort";
  }
  return "length";
}

std::uint32_t draw_reply_length(const ReplyLength& model, std::uint64_t sample_seed) {
  if (!(model.median > 0)) {
    return 0;
  }
  // Box-Muller from two 53-bit uniforms in (0, 1), on a stream of its own (not the output tokens').
  const std::uint64_t a = base::splitmix64(sample_seed ^ 0x7265706c796c656eULL);
  const std::uint64_t b = base::splitmix64(a);
  const double u1 = (static_cast<double>(a >> 11U) + 0.5) * 0x1.0p-53;
  const double u2 = (static_cast<double>(b >> 11U) + 0.5) * 0x1.0p-53;
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  const double length = std::round(model.median * std::exp(model.sigma * z));
  return static_cast<std::uint32_t>(std::clamp(length, 1.0, 1e9));
}

std::span<const double> ttft_bucket_bounds() {
  return kTtftBuckets;
}

void Histogram::observe(double v) {
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (v <= bounds[i]) {
      ++buckets[i];
    }
  }
  sum += v;
  ++count;
}

struct Engine::Impl {
  struct Request {
    RequestId id = 0;
    Tokens tokens;  // prompt followed by the tokens generated so far
    std::uint32_t prompt_len = 0;
    std::uint32_t max_output = 0;  // the cap: max_tokens and the context
    std::uint32_t reply_len = 0;   // tokens the reply will have: the drawn length or the cap
    FinishReason ends_by = FinishReason::length;
    std::uint32_t num_computed = 0;  // tokens whose KV is in `blocks`
    std::uint32_t num_output = 0;
    std::uint32_t num_registered = 0;  // leading blocks already offered to the prefix cache
    std::vector<BlockId> blocks;
    std::vector<BlockId> state;       // a hybrid model's linear state, held while the request runs
    std::vector<BlockHash> hashes;    // chained hashes of the full blocks of `tokens` seen so far
    std::int64_t cached_tokens = -1;  // set at first scheduling
    std::uint64_t sample_seed = 0;
    double arrival = 0;
    std::int64_t priority = 0;        // RequestSpec::priority
    std::uint64_t order = 0;          // the order add_request saw it: the last tie-break
    std::uint32_t assume_cached = 0;  // RequestSpec::assume_cached_tokens
    Tokens fixed_reply;               // when not empty: the reply's tokens (a tool call)
    std::string session_id;           // RequestSpec::session_id
  };

  struct Scheduled {
    Request* req;
    std::uint32_t num_new;
    std::uint32_t context;
  };

  EngineConfig config;         // resolved: block_size and num_gpu_blocks as the engine runs with them
  std::uint32_t state_blocks;  // blocks a running request's linear state holds (0: dense model)
  std::uint64_t seed;
  BlockCache cache;
  OffloadTier offload;
  KvEventLog kv_log;
  std::unordered_map<RequestId, Request> requests;
  std::vector<RequestId> running;  // in admission order; the back is preempted first under fcfs
  std::deque<RequestId> waiting;   // under priority: sorted by queued_before()
  std::uint64_t next_order = 0;
  Metrics m;
  double load_s = 0;  // PCIe time of the blocks loaded from the offload tier in the step being built

  Impl(EngineConfig c, std::uint64_t s)
      : config(resolve_cache(std::move(c))),
        state_blocks(state_blocks_per_seq(config.time)),
        seed(s),
        cache(config.num_gpu_blocks, config.block_size),
        offload(offload_capacity_blocks(config)),
        kv_log(config.kv_events, config.block_size, state_blocks) {
    m.time_to_first_token.bounds.assign(kTtftBuckets.begin(), kTtftBuckets.end());
    m.time_to_first_token.buckets.assign(kTtftBuckets.size(), 0);
    m.num_gpu_blocks = config.num_gpu_blocks;
    m.num_cpu_blocks = static_cast<std::uint32_t>(offload.capacity());
    m.block_size = config.block_size;
  }

  // Blocks of the prompt a fresh lookup would hit, leaving at least one token to compute.
  std::size_t hit_blocks(const Request& r) const {
    return cache.count_cached_prefix(std::span(r.hashes).first(hit_limit(r)));
  }

  // The most blocks a lookup may find, in either cache: whole blocks of the prompt but its last token.
  std::size_t hit_limit(const Request& r) const {
    return std::min((r.tokens.size() - 1) / config.block_size, r.hashes.size());
  }

  // Registers every block that will be full once `upto` tokens are computed.
  void register_full_blocks(Request& r, std::uint32_t upto) {
    extend_block_hashes(std::span(r.tokens).first(upto), config.block_size, r.hashes);
    const std::uint32_t full = upto / config.block_size;
    // Announced in runs of blocks the cache took: a block whose hash another block already carries is
    // not cached under it here (one block per hash), so it is not announced, and never removed either.
    std::size_t run = r.num_registered;
    for (; r.num_registered < full; ++r.num_registered) {
      if (!cache.cache_block(r.blocks[r.num_registered], r.hashes[r.num_registered])) {
        announce(r, run, r.num_registered, upto);
        run = r.num_registered + 1;
      }
      store_offload(r.hashes[r.num_registered]);
    }
    announce(r, run, full, upto);
  }

  void announce(const Request& r, std::size_t first, std::size_t last, std::uint32_t upto) {
    if (first < last) {
      kv_log.stored({.tokens = r.tokens,
                     .hashes = r.hashes,
                     .first = first,
                     .last = last,
                     .upto = upto,
                     .session_id = &r.session_id});
    }
  }

  // A computed block copied to the offload tier (vLLM's connector stores it as it is computed).
  void store_offload(BlockHash hash) {
    const OffloadStore s = offload.store(hash);
    if (s.evicted) {
      kv_log.cpu_removed(*s.evicted);
    }
    if (s.added) {
      kv_log.cpu_stored(hash);
    }
  }

  // A fresh block from the cache (one must be free), its old hash evicted as vLLM's get_new_blocks does.
  BlockId allocate_block() {
    if (kv_log.on()) {
      if (const auto evicted = cache.next_evicted()) {
        kv_log.removed(*evicted);
      }
    }
    return *cache.allocate();
  }

  // Allocates the blocks `num_new` more tokens need; all or nothing.
  bool allocate_slots(Request& r, std::uint32_t num_new) {
    const std::uint32_t need = ceil_div(std::uint64_t{r.num_computed} + num_new, config.block_size);
    const std::uint32_t extra =
        need > r.blocks.size() ? need - static_cast<std::uint32_t>(r.blocks.size()) : 0;
    if (extra > cache.num_free()) {
      return false;
    }
    for (std::uint32_t i = 0; i < extra; ++i) {
      r.blocks.push_back(allocate_block());
    }
    register_full_blocks(r, r.num_computed + num_new);
    return true;
  }

  void free_blocks(Request& r) {
    cache.release(r.state);
    r.state.clear();
    cache.release(r.blocks);
    r.blocks.clear();
    r.num_registered = 0;
    r.num_computed = 0;
  }

  bool by_priority() const { return config.scheduling_policy == SchedulingPolicy::priority; }

  // vLLM's Request ordering under the priority policy: (priority, arrival), then the order added.
  bool queued_before(RequestId a, RequestId b) const {
    const Request& x = requests.at(a);
    const Request& y = requests.at(b);
    return std::tie(x.priority, x.arrival, x.order) < std::tie(y.priority, y.arrival, y.order);
  }

  // Into the waiting queue in its place: behind everything under fcfs (or in front, for a preempted
  // request), by (priority, arrival) under priority.
  void enqueue(RequestId id, bool preempted) {
    if (by_priority()) {
      const auto at = std::upper_bound(waiting.begin(), waiting.end(), id,
                                       [this](RequestId a, RequestId b) { return queued_before(a, b); });
      waiting.insert(at, id);
    } else if (preempted) {
      waiting.push_front(id);
    } else {
      waiting.push_back(id);
    }
  }

  // The running request to preempt: the latest admitted under fcfs, the largest (priority, arrival) under
  // priority (vLLM's max(running, key=(priority, arrival_time))).
  std::size_t victim_index() const {
    if (!by_priority()) {
      return running.size() - 1;
    }
    // The first of equal (priority, arrival) in running order, as Python's max() returns.
    const auto it = std::max_element(running.begin(), running.end(), [this](RequestId a, RequestId b) {
      const Request& x = requests.at(a);
      const Request& y = requests.at(b);
      return std::tie(x.priority, x.arrival) < std::tie(y.priority, y.arrival);
    });
    return static_cast<std::size_t>(it - running.begin());
  }

  void preempt(std::size_t index, StepResult& out) {
    const RequestId id = running[index];
    running.erase(running.begin() + static_cast<std::ptrdiff_t>(index));
    Request& r = requests.at(id);
    free_blocks(r);
    enqueue(id, true);
    ++m.num_preemptions_total;
    ++out.stats.num_preempted;
    Event e;
    e.kind = Event::Kind::preempted;
    e.request = id;
    out.events.push_back(e);
  }

  // A step as vLLM's Scheduler.schedule(): running requests first, then admissions, then the batch.
  StepResult step(double now) {
    StepResult out;
    std::vector<Scheduled> scheduled;
    load_s = 0;
    // A pass that preempted the very request it was scheduling before scheduling anything (under the
    // priority policy the first running request may have the lowest priority) runs no batch: vLLM's engine
    // loop calls its scheduler again at once, and that pass goes on without the preempted request. Each
    // extra pass follows a preemption, so there are at most as many as running requests.
    for (bool again = true; again;) {
      const std::uint32_t preempted_before = out.stats.num_preempted;
      std::uint32_t budget = config.max_num_batched_tokens;
      schedule_running(out, scheduled, budget);
      const bool preempted = out.stats.num_preempted > preempted_before;
      // Admission is skipped in a pass that had to preempt.
      if (!preempted) {
        admit_waiting(scheduled, budget);
      }
      again = preempted && scheduled.empty();
    }
    if (!scheduled.empty()) {
      apply_batch(now, scheduled, out);
    }
    out.kv_events = kv_log.take();
    return out;
  }

  // 1. Running requests, in order; preempts (victim_index()) when blocks run out.
  void schedule_running(StepResult& out, std::vector<Scheduled>& scheduled, std::uint32_t& budget) {
    for (std::size_t i = 0; i < running.size() && budget > 0;) {
      Request& r = requests.at(running[i]);
      const auto remaining = static_cast<std::uint32_t>(r.tokens.size()) - r.num_computed;
      const std::uint32_t num_new = std::min(remaining, budget);
      bool self_preempted = false;
      while (!allocate_slots(r, num_new)) {
        const std::size_t victim = victim_index();
        self_preempted = victim == i;
        if (victim < i) {
          // Scheduled earlier in this step (priority only): its tokens go back to the budget.
          unschedule(requests.at(running[victim]), scheduled, budget);
          --i;
        }
        preempt(victim, out);
        if (self_preempted) {
          break;
        }
      }
      if (self_preempted) {
        return;
      }
      scheduled.push_back({&r, num_new, r.num_computed});
      budget -= num_new;
      ++i;
    }
  }

  static void unschedule(const Request& r, std::vector<Scheduled>& scheduled, std::uint32_t& budget) {
    const auto it =
        std::find_if(scheduled.begin(), scheduled.end(), [&](const Scheduled& s) { return s.req == &r; });
    budget += it->num_new;
    scheduled.erase(it);
  }

  // 2. Waiting requests in queue order while seats and budget remain; the first that does not fit stops
  // admission.
  void admit_waiting(std::vector<Scheduled>& scheduled, std::uint32_t& budget) {
    while (!waiting.empty() && running.size() < config.max_num_seqs && budget > 0) {
      Request& r = requests.at(waiting.front());
      const std::optional<std::uint32_t> num_new = admit(r, budget);
      if (!num_new) {
        return;
      }
      waiting.pop_front();
      running.push_back(r.id);
      scheduled.push_back({&r, *num_new, r.num_computed});
      budget -= *num_new;
    }
  }

  // Blocks a waiting request must find to be admitted with `upto` tokens computed: those of its whole
  // sequence under the full-prompt gate, else just those of its first chunk.
  std::uint32_t need_for(const Request& r, std::uint32_t upto) const {
    const std::uint64_t tokens = config.reserve_full_prompt != 0 ? r.tokens.size() : upto;
    return ceil_div(tokens, config.block_size);
  }

  // vLLM keeps the watermark free only while something runs, so an idle engine always admits.
  std::uint32_t watermark_blocks() const {
    return running.empty() ? 0U : static_cast<std::uint32_t>(config.kv_watermark * config.num_gpu_blocks);
  }

  // Prefix lookup, then blocks for the uncached part chunked to `budget`: the tokens scheduled, or
  // nullopt (and nothing changed) when the blocks do not fit.
  std::optional<std::uint32_t> admit(Request& r, std::uint32_t budget) {
    extend_block_hashes(r.tokens, config.block_size, r.hashes);
    const std::size_t hits = hit_blocks(r);
    // Hit blocks sitting in the free queue leave it when taken, so they count against the free blocks.
    const std::size_t evictable = cache.count_free_in_prefix(r.hashes, hits);
    const auto hit_tokens = static_cast<std::uint32_t>(hits * config.block_size);
    const std::uint32_t assumed = assumed_tokens(r);
    std::uint32_t loaded = offload_hit_blocks(r, hits) * config.block_size;
    if (assumed > hit_tokens + loaded) {
      loaded = 0;  // the ceiling's assumed hits cover more than the offload tier would load
    }
    const std::uint32_t known = std::max(hit_tokens + loaded, assumed);
    const std::uint32_t num_new = std::min(static_cast<std::uint32_t>(r.tokens.size()) - known, budget);
    if (need_for(r, known + num_new) + state_blocks - hits + evictable + watermark_blocks() >
        cache.num_free()) {
      return std::nullopt;
    }
    r.blocks = cache.acquire_cached(r.hashes, hits);
    r.num_registered = static_cast<std::uint32_t>(hits);
    r.num_computed = hit_tokens;
    // Assumed tokens past the real hits get fresh blocks, computed for free.
    const bool ok = allocate_slots(r, known - hit_tokens + num_new);
    assert(ok);
    (void)ok;
    for (std::uint32_t i = 0; i < state_blocks; ++i) {
      r.state.push_back(allocate_block());
    }
    r.num_computed = known;
    load_s += static_cast<double>(loaded) * config.time.kv_bytes_per_token() / config.time.pcie_bandwidth;
    if (r.cached_tokens < 0) {
      // First scheduling: this is what vLLM reports as cached_tokens (local and loaded hits) and counts
      // in its prefix stats (local hits) and its connector's (loaded ones).
      r.cached_tokens = known;
      m.prefix_cache_queries_total += r.tokens.size();
      m.prefix_cache_hits_total += known - loaded;
      if (offload.capacity() > 0) {
        m.external_prefix_cache_queries_total += r.tokens.size();
        m.external_prefix_cache_hits_total += loaded;
      }
    }
    return num_new;
  }

  // Blocks past the first `gpu_hits` that the offload tier holds, leaving at least one token to compute.
  std::uint32_t offload_hit_blocks(const Request& r, std::size_t gpu_hits) {
    const std::size_t max_blocks = hit_limit(r);
    if (offload.capacity() == 0 || gpu_hits >= max_blocks) {
      return 0;
    }
    return static_cast<std::uint32_t>(
        offload.lookup(std::span(r.hashes).subspan(gpu_hits, max_blocks - gpu_hits)));
  }

  // RequestSpec::assume_cached_tokens in whole blocks, leaving at least one token to compute.
  std::uint32_t assumed_tokens(const Request& r) const {
    const std::uint32_t max_blocks = static_cast<std::uint32_t>(r.tokens.size() - 1) / config.block_size;
    return std::min(r.assume_cached / config.block_size, max_blocks) * config.block_size;
  }

  // 3. Times the batch, then applies it: requests that caught up emit one token at now + duration.
  void apply_batch(double now, const std::vector<Scheduled>& scheduled, StepResult& out) {
    std::vector<ScheduledChunk> chunks;
    chunks.reserve(scheduled.size());
    for (const auto& s : scheduled) {
      chunks.push_back({s.num_new, s.context});
      const bool decode = s.num_new == 1 && s.req->num_output > 0 && s.context + 1 == s.req->tokens.size();
      (decode ? out.stats.num_decode_tokens : out.stats.num_prefill_tokens) += s.num_new;
    }
    out.stats.num_scheduled_requests = static_cast<std::uint32_t>(scheduled.size());
    out.stats.cost = config.time.cost(chunks);
    // Loads from the offload tier are charged to the step as if they did not overlap it (vLLM runs them
    // on their own stream while other requests step): an upper bound on what they cost.
    out.stats.load_s = load_s;
    out.duration = out.stats.cost.total_s + load_s;
    const double done_at = now + out.duration;

    bool any_finished = false;
    for (const auto& s : scheduled) {
      Request& r = *s.req;
      r.num_computed += s.num_new;
      if (r.num_computed < r.tokens.size()) {
        continue;  // chunked prefill continues next step
      }
      out.events.push_back(emit_token(r, done_at));
      any_finished = any_finished || out.events.back().finished;
    }
    if (any_finished) {
      std::erase_if(running, [&](RequestId id) {
        const auto it = requests.find(id);
        if (it->second.num_output >= it->second.reply_len) {
          requests.erase(it);
          return true;
        }
        return false;
      });
    }
  }

  // The next token of a request whose computed tokens caught up with its length.
  Event emit_token(Request& r, double done_at) {
    Event e;
    e.request = r.id;
    e.index = r.num_output;
    e.first_token = r.num_output == 0;
    e.token =
        r.num_output < r.fixed_reply.size()
            ? r.fixed_reply[r.num_output]
            : output_token(base::splitmix64(r.sample_seed ^ base::splitmix64(r.num_output)), r.num_output);
    r.tokens.push_back(e.token);
    ++r.num_output;
    ++m.generation_tokens_total;
    const auto cached = static_cast<std::uint32_t>(std::max<std::int64_t>(0, r.cached_tokens));
    if (e.first_token) {
      // Lets a server report prompt and cached tokens as soon as streaming starts.
      e.usage = {r.prompt_len, cached, 1, FinishReason::length};
      m.prompt_tokens_total += r.prompt_len;
      m.time_to_first_token.observe(std::max(0.0, done_at - r.arrival));
    }
    if (r.num_output >= r.reply_len) {
      e.finished = true;
      e.usage = {r.prompt_len, cached, r.num_output, r.ends_by};
      ++m.requests_finished_total;
      free_blocks(r);
    }
    return e;
  }
};

Engine::Engine(EngineConfig config, std::uint64_t seed) {
  assert(validate(config).has_value());
  impl_ = std::make_unique<Impl>(std::move(config), seed);
}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

Result<void> Engine::add_request(RequestSpec spec) {
  auto& im = *impl_;
  const auto& c = im.config;
  if (im.requests.contains(spec.id)) {
    return make_error("request id " + std::to_string(spec.id) + " is already in use");
  }
  if (spec.prompt.empty()) {
    return make_error("The prompt cannot be empty", "prompt");
  }
  if (spec.max_tokens < 1) {
    return make_error("max_tokens must be at least 1, got " + std::to_string(spec.max_tokens), "max_tokens");
  }
  for (TokenId t : spec.prompt) {
    if (t >= kVocabSize) {
      return make_error("token id " + std::to_string(t) + " is out of vocabulary", "prompt");
    }
  }
  const auto prompt_len = static_cast<std::uint64_t>(spec.prompt.size());
  if (prompt_len >= c.max_model_len) {
    return make_error("The decoder prompt (length " + std::to_string(prompt_len) +
                          ") is longer than the maximum model length of " + std::to_string(c.max_model_len) +
                          ".",
                      "prompt");
  }
  const auto max_output = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(static_cast<std::uint64_t>(spec.max_tokens), c.max_model_len - prompt_len));
  // KV is computed for every token but the last generated one.
  const std::uint32_t blocks = ceil_div(prompt_len + max_output - 1, c.block_size) + im.state_blocks;
  if (blocks > c.num_gpu_blocks) {
    return make_error("request needs " + std::to_string(blocks) + " KV blocks but the cache holds only " +
                          std::to_string(c.num_gpu_blocks),
                      "prompt");
  }
  Impl::Request r;
  r.id = spec.id;
  r.sample_seed = spec.sample_seed ? *spec.sample_seed : prompt_seed(im.seed, spec.prompt);
  r.tokens = std::move(spec.prompt);
  r.tokens.reserve(r.tokens.size() + max_output);
  r.prompt_len = static_cast<std::uint32_t>(prompt_len);
  r.max_output = max_output;
  if (spec.reply && !spec.reply->empty()) {
    r.fixed_reply = std::move(*spec.reply);
  }
  std::uint32_t drawn = r.fixed_reply.empty() ? draw_reply_length(c.reply, r.sample_seed)
                                              : static_cast<std::uint32_t>(r.fixed_reply.size());
  if (spec.ignore_eos) {
    drawn = 0;  // no EOS: the cap ends the reply
  } else if (drawn > 0) {
    drawn = std::max(drawn, spec.min_tokens);
  }
  r.reply_len = drawn > 0 && drawn < max_output ? drawn : max_output;
  r.ends_by = drawn > 0 && drawn < max_output ? FinishReason::stop : FinishReason::length;
  r.arrival = spec.arrival_time;
  r.priority = spec.priority;
  r.order = im.next_order++;
  r.assume_cached = spec.assume_cached_tokens;
  r.session_id = std::move(spec.session_id);
  extend_block_hashes(r.tokens, c.block_size, r.hashes);
  im.requests.emplace(r.id, std::move(r));
  im.enqueue(spec.id, false);
  return {};
}

bool Engine::abort(RequestId id) {
  auto& im = *impl_;
  const auto it = im.requests.find(id);
  if (it == im.requests.end()) {
    return false;
  }
  if (const auto w = std::find(im.waiting.begin(), im.waiting.end(), id); w != im.waiting.end()) {
    im.waiting.erase(w);
  }
  if (const auto r = std::find(im.running.begin(), im.running.end(), id); r != im.running.end()) {
    im.running.erase(r);
  }
  im.free_blocks(it->second);
  im.requests.erase(it);
  ++im.m.requests_aborted_total;
  return true;
}

bool Engine::has_work() const {
  return !impl_->running.empty() || !impl_->waiting.empty();
}

StepResult Engine::step(double now) {
  return impl_->step(now);
}

Metrics Engine::metrics() const {
  Metrics m = impl_->m;
  m.num_running = static_cast<std::uint32_t>(impl_->running.size());
  m.num_waiting = static_cast<std::uint32_t>(impl_->waiting.size());
  m.kv_cache_usage = impl_->cache.usage();
  return m;
}

const EngineConfig& Engine::config() const {
  return impl_->config;
}

std::size_t Engine::cached_prefix_tokens(std::span<const TokenId> prompt) const {
  if (prompt.empty()) {
    return 0;
  }
  const std::uint32_t bs = impl_->config.block_size;
  std::vector<BlockHash> hashes;
  extend_block_hashes(prompt.first((prompt.size() - 1) / bs * bs), bs, hashes);
  return impl_->cache.count_cached_prefix(hashes) * bs;
}

const BlockCache& Engine::cache() const {
  return impl_->cache;
}

std::vector<RequestId> Engine::running_ids() const {
  return impl_->running;
}

std::vector<RequestId> Engine::waiting_ids() const {
  return {impl_->waiting.begin(), impl_->waiting.end()};
}

}  // namespace warden::engine
