// One vLLM engine rank as a deterministic state machine in virtual time (vLLM V1 scheduler semantics).
//
// Driving it: add_request() when a request arrives; while has_work(), r = step(now) and advance the clock
// to now + r.duration, then deliver r.events (they happen at now + r.duration). The sim server does this
// against a scaled wall clock, the what-if driver against a virtual clock. No clocks, threads or I/O here.
//
// Each step (like vLLM's Scheduler.schedule()):
// 1. Running requests, in order, get their next tokens: 1 for a decoding request, the rest of the prompt
//    (capped by the remaining max_num_batched_tokens budget) for one still in chunked prefill. When a
//    block is needed and none is free, a running request is preempted (recompute: its blocks are
//    released), repeatedly, until the allocation succeeds or the request itself was the one preempted.
//    Under config.scheduling_policy fcfs the victim is the most recently admitted one and returns to the
//    FRONT of the waiting queue; under priority it is the one with the largest (priority, arrival), even
//    one already scheduled this step (its tokens go back to the budget), and it rejoins the waiting queue
//    in (priority, arrival) order.
// 2. If nothing was preempted this step, waiting requests are admitted in queue order (arrival under
//    fcfs, (priority, arrival) under priority) while running < max_num_seqs
//    and budget remains: prefix-cache lookup (hits capped so at least one prompt token is computed), then
//    with config.kv_offloading_size the offload tier's lookup of the blocks that follow (loaded, not
//    computed), then the uncached part, chunked to the budget. A request is admitted when the free blocks
//    hold its whole sequence (config.reserve_full_prompt, current vLLM) or its first chunk (older vLLM), plus
//    the watermark while anything runs. The first request that does not fit stops admission.
// 3. The step's duration comes from StepTimeModel over the scheduled chunks, plus the PCIe time of the
//    blocks loaded from the offload tier for the requests it admitted. Every request whose
//    computed tokens reach its full length emits one token at the end of the step.
//
// Stop rule: a request's cap is min(max_tokens, max_model_len - prompt_len). With config.reply on, its
// reply length is drawn from the sample seed (draw_reply_length) and raised to the request's min_tokens;
// a draw below the cap ends the reply there with finish_reason "stop" (the model's EOS), otherwise the cap
// does, with "length" (vLLM checks the length cap before EOS). With ignore_eos the cap always does. With
// config.reply off every reply runs to its cap. Output tokens are output_token(hash(sample seed, index),
// index) where the sample seed defaults to hash(engine seed, prompt tokens): the same prompt and seed give
// the same reply in every process, independent of request ids and timing.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/block_cache.hpp"
#include "engine/config.hpp"
#include "engine/kv_events.hpp"
#include "engine/offload_tier.hpp"
#include "engine/result.hpp"
#include "engine/step_time.hpp"
#include "engine/tokenizer.hpp"

namespace warden::engine {

using RequestId = std::uint64_t;

enum class FinishReason { length, stop, abort };
std::string_view finish_reason_name(FinishReason r);  // "length", "stop", "abort"

// The reply length config.reply gives a request with this sample seed, before any cap: at least 1;
// 0 when the model is off (median 0). Pure and portable: the same seed gives the same length anywhere.
std::uint32_t draw_reply_length(const ReplyLength& model, std::uint64_t sample_seed);

struct RequestSpec {
  RequestId id = 0;
  Tokens prompt;
  int max_tokens = 16;
  // vLLM's sampling fields: ignore_eos runs the reply to its cap whatever length was drawn; min_tokens
  // is a floor on the drawn length (the model emits no EOS before it). A fixed reply is extended past its
  // tokens by generated ones.
  bool ignore_eos = false;
  std::uint32_t min_tokens = 0;
  double arrival_time = 0;  // for the TTFT histogram (TTFT = first token time - arrival_time)
  // vLLM's request `priority`, read only under SchedulingPolicy::priority: lower is served first, ties by
  // arrival_time, then by the order requests were added.
  std::int64_t priority = 0;
  std::optional<std::uint64_t> sample_seed;  // overrides the prompt-derived output seed
  // vLLM's request session_id (body `session_id` or header X-Session-ID): stamped on the GPU BlockStored
  // events of the blocks this request fills ("" = none). No effect on scheduling.
  std::string session_id;
  // The reply's tokens, fixed in advance (a tool call, engine/tool_calls.hpp): generated one per step like
  // any reply, ending with "stop" after the last one unless max_tokens or the context cuts them first.
  std::optional<Tokens> reply;
  // What-if ceiling only (`simulate` policy `ceiling`): the first this many prompt tokens count as a prefix
  // hit whatever the cache holds, as if it had kept them. Their blocks are still taken from the free
  // queue, so memory and preemption are modelled as for a real hit; only their prefill is skipped.
  std::uint32_t assume_cached_tokens = 0;
};

struct Usage {
  std::uint32_t prompt_tokens = 0;
  // Prompt tokens served from the prefix cache at the request's first scheduling (vLLM's
  // num_cached_tokens); a later recompute after preemption does not change it.
  std::uint32_t cached_tokens = 0;
  std::uint32_t completion_tokens = 0;
  FinishReason finish_reason = FinishReason::length;
};

struct Event {
  enum class Kind { token, preempted };
  Kind kind = Kind::token;
  RequestId request = 0;
  TokenId token = 0;         // kind == token
  std::uint32_t index = 0;   // position of the token in the reply (0 = first)
  bool first_token = false;  // index == 0
  bool finished = false;     // last token of the request
  // Valid when finished; on a first_token event prompt_tokens and cached_tokens are already final.
  Usage usage;
};

struct StepStats {
  std::uint32_t num_scheduled_requests = 0;
  std::uint32_t num_prefill_tokens = 0;  // tokens of requests still in (chunked) prefill
  std::uint32_t num_decode_tokens = 0;
  std::uint32_t num_preempted = 0;
  StepCost cost;
  double load_s = 0;  // KV loaded from the offload tier for requests admitted this step (PCIe time)
};

struct StepResult {
  double duration = 0;  // 0 only when nothing could be scheduled (has_work() is then false)
  std::vector<Event> events;
  StepStats stats;
  // With EngineConfig::kv_events: the KV cache events of this step, in the order vLLM's KV cache manager
  // records them (empty when off).
  std::vector<KvEvent> kv_events;
};

// vLLM's TTFT buckets (vllm/v1/metrics/loggers.py).
std::span<const double> ttft_bucket_bounds();

struct Histogram {
  std::vector<double> bounds;          // upper bounds, ascending; +Inf is implicit (== count)
  std::vector<std::uint64_t> buckets;  // cumulative: buckets[i] = observations <= bounds[i]
  double sum = 0;
  std::uint64_t count = 0;
  void observe(double v);
};

struct Metrics {
  std::uint32_t num_running = 0;
  std::uint32_t num_waiting = 0;
  double kv_cache_usage = 0;  // 0..1
  // Counters (only grow):
  std::uint64_t prefix_cache_queries_total = 0;  // prompt tokens looked up at first scheduling
  std::uint64_t prefix_cache_hits_total = 0;     // of those, found in cache
  std::uint64_t prompt_tokens_total = 0;         // prompt length of each request, counted at its first token
  std::uint64_t generation_tokens_total = 0;
  std::uint64_t num_preemptions_total = 0;
  // vLLM's KV connector counters (vllm:external_prefix_cache_*), with the offload tier on: prompt tokens
  // looked up there at first scheduling, and those loaded from it instead of computed.
  std::uint64_t external_prefix_cache_queries_total = 0;
  std::uint64_t external_prefix_cache_hits_total = 0;
  // Prompt tokens served from either cache rather than computed.
  std::uint64_t all_prefix_hits() const { return prefix_cache_hits_total + external_prefix_cache_hits_total; }
  std::uint64_t requests_finished_total = 0;  // finished by the stop rule
  std::uint64_t requests_aborted_total = 0;
  Histogram time_to_first_token;
  // Config, for vllm:cache_config_info.
  std::uint32_t num_gpu_blocks = 0;
  std::uint32_t num_cpu_blocks = 0;  // the offload tier's capacity (0 = offload off)
  std::uint32_t block_size = 0;
};

class Engine {
 public:
  // `config` must pass validate(); the constructor asserts it.
  Engine(EngineConfig config, std::uint64_t seed);
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  // Queues a request (by arrival, or by priority under SchedulingPolicy::priority). Errors: duplicate id,
  // empty prompt, max_tokens < 1, token id >= kVocabSize, prompt_len >= max_model_len ("...longer than the
  // maximum model length..."), or a request whose prompt + output could never fit in the whole KV cache.
  Result<void> add_request(RequestSpec spec);

  // Removes a waiting or running request at once, releasing its blocks. False if unknown / finished.
  bool abort(RequestId id);

  bool has_work() const;
  StepResult step(double now);

  Metrics metrics() const;
  const EngineConfig& config() const;

  // Prompt tokens a new request with these tokens would find cached now (capped like admission).
  std::size_t cached_prefix_tokens(std::span<const TokenId> prompt) const;

  // Accessors for tests and debugging.
  const BlockCache& cache() const;
  std::vector<RequestId> running_ids() const;
  std::vector<RequestId> waiting_ids() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warden::engine
