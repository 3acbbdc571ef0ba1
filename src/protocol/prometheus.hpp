#pragma once
// Prometheus text exposition format (0.0.4) parser, sans-I/O, plus the vLLM metric extraction the
// gateway's scraper needs.
//
//   PromParser p;
//   p.feed(chunk, [&](const PromSample& s) { ... });   // any fragmentation
//   p.finish([&](const PromSample& s) { ... });        // last line may lack '\n'
//
// Accepted: "# TYPE name type", "# HELP name text" (other comments ignored), samples
// `name{label="value",...} value [timestamp_ms]` with labels in any order, label values with the escapes
// \" \\ \n, a trailing comma in the label set, values as floats incl. exponents, NaN, +Inf, -Inf, Inf.
// Anything else on a line (bad escape, missing value, bad number, binary garbage) makes the line
// "garbage": it is skipped and counted, and parsing continues at the next line. Lines longer than
// max_line_bytes are skipped without being buffered (counted as oversized). More than max_series
// samples is an error (Errc::prom_too_many_series) and the parser stays failed.

#include "protocol/error.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace warden::protocol {

enum class PromType { untyped, counter, gauge, histogram, summary };

struct PromLabel {
  std::string name;
  std::string value;  // unescaped
};

struct PromSample {
  std::string name;
  std::vector<PromLabel> labels;  // in input order; never rely on it, use label()
  double value = 0.0;
  std::optional<std::int64_t> timestamp_ms;

  /// The value of label `name`, or nullopt if absent.
  std::optional<std::string_view> label(std::string_view name) const noexcept;
};

struct PromLimits {
  std::size_t max_line_bytes = 64u << 10;
  std::size_t max_series = 200'000;
  std::size_t max_labels = 64;  // more labels on one sample: the line is garbage
};

struct PromStats {
  std::uint64_t lines = 0;            // all lines, incl. blank and comments
  std::uint64_t samples = 0;          // samples delivered
  std::uint64_t garbage_lines = 0;    // lines that were neither blank, comment nor a valid sample
  std::uint64_t oversized_lines = 0;  // lines skipped for exceeding max_line_bytes (not in garbage_lines)
};

class PromParser {
 public:
  explicit PromParser(PromLimits limits = {}) : limits_(limits) {}

  /// Consumes bytes; calls on_sample(const PromSample&) for every complete sample line.
  template <class F>
  Result<void> feed(std::string_view bytes, F&& on_sample) {
    return feed_impl(bytes, &thunk<F>, &on_sample);
  }
  /// End of input: parses a final line that has no line end.
  template <class F>
  Result<void> finish(F&& on_sample) {
    return finish_impl(&thunk<F>, &on_sample);
  }

  const PromStats& stats() const noexcept { return stats_; }
  /// The type declared by "# TYPE" for a metric family (untyped if none was declared).
  PromType type_of(std::string_view family) const;
  /// "# HELP" text of a family, if any.
  std::optional<std::string_view> help_of(std::string_view family) const;

 private:
  using Thunk = void (*)(void*, const PromSample&);
  template <class F>
  static void thunk(void* ctx, const PromSample& s) {
    (*static_cast<std::remove_reference_t<F>*>(ctx))(s);
  }
  Result<void> feed_impl(std::string_view bytes, Thunk t, void* ctx);
  Result<void> finish_impl(Thunk t, void* ctx);
  Result<void> process_line(std::string_view line, Thunk t, void* ctx);
  /// A "#" line without its "#": records "# TYPE" and "# HELP"; other comments are skipped.
  void process_comment(std::string_view line);

  PromLimits limits_;
  PromStats stats_;
  std::string line_;
  bool skipping_ = false;  // inside an oversized line: drop bytes until the next line end
  bool failed_ = false;
  PromSample sample_;  // reused to avoid reallocations
  std::unordered_map<std::string, PromType> types_;
  std::unordered_map<std::string, std::string> help_;
};

/// Whole-buffer convenience: all samples of `text`.
struct PromScrape {
  std::vector<PromSample> samples;
  PromStats stats;
};
Result<PromScrape> parse_prometheus(std::string_view text, PromLimits limits = {});

// ---------------------------------------------------------------------------------------------------
// vLLM extraction

/// One engine rank's metrics. Every field is optional: absent from the scrape = nullopt.
struct VllmRank {
  int engine = 0;  // value of the `engine` label (0 if the series has none)
  std::optional<double> num_requests_running;
  std::optional<double> num_requests_waiting;
  std::optional<double> kv_cache_usage_perc;  // 0..1; falls back to vllm:gpu_cache_usage_perc
  // Fall back to the deprecated vllm:gpu_prefix_cache_{queries,hits}_total.
  std::optional<double> prefix_cache_queries_total;
  std::optional<double> prefix_cache_hits_total;
  // Prompt tokens loaded from a KV connector instead of computed (vllm:external_prefix_cache_hits_total:
  // vLLM's CPU offload, LMCache): hits too, outside the GPU cache's own counters.
  std::optional<double> external_prefix_cache_hits_total;
  std::optional<double> prompt_tokens_total;
  std::optional<double> generation_tokens_total;
  // Requests preempted for KV blocks (vllm:num_preemptions_total): a rank whose count climbs is thrashing.
  std::optional<double> num_preemptions_total;
  std::optional<std::int64_t> block_size;      // from vllm:cache_config_info labels
  std::optional<std::int64_t> num_gpu_blocks;  // from vllm:cache_config_info labels
  // Host (CPU) KV offload, from vllm:cache_config_info labels too: kv_offloading_size (GiB; "None" = off,
  // read as 0), num_cpu_blocks and kv_cache_memory_bytes (absent or "None": nullopt).
  std::optional<double> kv_offloading_gib;
  std::optional<std::int64_t> num_cpu_blocks;
  std::optional<std::int64_t> kv_cache_memory_bytes;

  /// Prompt tokens the rank did not compute: its GPU cache's hits plus those its KV connector loaded
  /// (nullopt without the GPU cache's counter).
  std::optional<double> all_prefix_hits() const {
    if (!prefix_cache_hits_total) {
      return std::nullopt;
    }
    return *prefix_cache_hits_total + external_prefix_cache_hits_total.value_or(0.0);
  }
};

struct VllmScrape {
  std::vector<VllmRank> ranks;  // sorted by engine, one entry per engine seen
  PromStats stats;
  std::uint64_t skipped_samples = 0;  // vllm: samples ignored: other model_name, bad engine label

  /// The rank with that engine index, or nullptr.
  const VllmRank* rank(int engine) const noexcept;
};

/// Folds samples into a VllmScrape; use with PromParser for fragmented input.
class VllmScrapeBuilder {
 public:
  /// Engine labels outside 0..kMaxEngines-1 are skipped (counted in skipped_samples).
  static constexpr int kMaxEngines = 4096;

  /// Only samples whose model_name label equals `model_name` count (and cache_config_info, which has no
  /// model_name label); empty = accept every model.
  explicit VllmScrapeBuilder(std::string model_name = {}) : model_name_(std::move(model_name)) {}
  void add(const PromSample& s);
  /// The result (ranks sorted by engine); `stats` is copied in by the caller if wanted.
  VllmScrape take();

 private:
  std::size_t rank_index(int engine);  // index in ranks_, added if new
  std::string model_name_;
  std::vector<VllmRank> ranks_;
  // Deprecated metric names per entry of ranks_, used only where the current name is absent.
  struct Legacy {
    std::optional<double> gpu_cache_usage_perc;
    std::optional<double> gpu_prefix_cache_queries_total;
    std::optional<double> gpu_prefix_cache_hits_total;
  };
  std::vector<Legacy> legacy_;
  std::vector<std::uint32_t> slot_;  // engine -> 1 + index in ranks_ (0 = not seen)
  std::uint64_t skipped_ = 0;
};

/// Parses a whole /metrics body into per-rank vLLM metrics (see VllmScrapeBuilder for model filtering).
Result<VllmScrape> parse_vllm_metrics(std::string_view text, std::string_view model_name = {},
                                      PromLimits limits = {});

}  // namespace warden::protocol
