#include "protocol/prometheus.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace warden::protocol {

namespace {

bool is_name_start(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool is_name_char(char c) noexcept {
  return is_name_start(c) || (c >= '0' && c <= '9');
}
bool is_blank(char c) noexcept {
  return c == ' ' || c == '\t';
}

void skip_blanks(std::string_view& s) noexcept {
  while (!s.empty() && is_blank(s.front())) {
    s.remove_prefix(1);
  }
}

// Takes a metric name (allow_colon) or label name from the front of s; empty on failure.
std::string_view take_name(std::string_view& s, bool allow_colon) noexcept {
  std::size_t n = 0;
  while (n < s.size() && is_name_char(s[n]) && (allow_colon || s[n] != ':')) {
    if (n == 0 && s[n] >= '0' && s[n] <= '9') {
      return {};
    }
    ++n;
  }
  const std::string_view name = s.substr(0, n);
  s.remove_prefix(n);
  return name;
}

std::string_view take_token(std::string_view& s) noexcept {
  std::size_t n = 0;
  while (n < s.size() && !is_blank(s[n])) {
    ++n;
  }
  const std::string_view t = s.substr(0, n);
  s.remove_prefix(n);
  return t;
}

// HELP text: a backslash escapes a backslash or an "n" (a line end); any other backslash stays as written.
std::string unescape_help(std::string_view line) {
  std::string text;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && (line[i + 1] == '\\' || line[i + 1] == 'n')) {
      text += line[i + 1] == 'n' ? '\n' : '\\';
      ++i;
    } else {
      text += line[i];
    }
  }
  return text;
}

// Prometheus float: Go's ParseFloat spellings that matter (NaN, [+-]Inf, exponents, leading '+').
std::optional<double> parse_float(std::string_view t) noexcept {
  if (t.empty()) {
    return std::nullopt;
  }
  bool negative = false;
  if (t.front() == '+' || t.front() == '-') {
    negative = t.front() == '-';
    t.remove_prefix(1);
  }
  if (t.empty() || t.front() == '+' || t.front() == '-') {
    return std::nullopt;
  }
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || ptr != t.data() + t.size()) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

std::optional<std::int64_t> parse_int(std::string_view t) noexcept {
  std::int64_t v = 0;
  if (!t.empty() && t.front() == '+') {
    t.remove_prefix(1);
  }
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size()) {
    return std::nullopt;
  }
  return v;
}

// Label value after the opening quote; unescapes \\ \" \n into out. False on a bad escape or no end.
bool take_label_value(std::string_view& s, std::string& out) {
  out.clear();
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"') {
      s.remove_prefix(i + 1);
      return true;
    }
    if (c == '\\') {
      if (i + 1 >= s.size()) {
        return false;
      }
      const char e = s[i + 1];
      if (e == '\\' || e == '"') {
        out += e;
      } else if (e == 'n') {
        out += '\n';
      } else {
        return false;
      }
      i += 2;
      continue;
    }
    out += c;
    ++i;
  }
  return false;
}

// Parses `{a="b",...}` (s starts after '{') into sample.labels. False on malformed input.
bool take_labels(std::string_view& s, PromSample& sample, std::size_t max_labels) {
  std::size_t count = 0;
  while (true) {
    skip_blanks(s);
    if (s.empty()) {
      return false;
    }
    if (s.front() == '}') {
      s.remove_prefix(1);
      sample.labels.resize(count);  // drop labels left over from the previous sample
      return true;
    }
    const std::string_view name = take_name(s, false);
    if (name.empty()) {
      return false;
    }
    skip_blanks(s);
    if (s.empty() || s.front() != '=') {
      return false;
    }
    s.remove_prefix(1);
    skip_blanks(s);
    if (s.empty() || s.front() != '"') {
      return false;
    }
    s.remove_prefix(1);
    if (++count > max_labels) {
      return false;
    }
    if (sample.labels.size() < count) {
      sample.labels.emplace_back();
    }
    PromLabel& label = sample.labels[count - 1];
    label.name.assign(name);
    if (!take_label_value(s, label.value)) {
      return false;
    }
    skip_blanks(s);
    if (!s.empty() && s.front() == ',') {
      s.remove_prefix(1);
    } else if (s.empty() || s.front() != '}') {
      return false;
    }
  }
}

std::optional<PromType> parse_type(std::string_view t) noexcept {
  if (t == "counter") {
    return PromType::counter;
  }
  if (t == "gauge") {
    return PromType::gauge;
  }
  if (t == "histogram") {
    return PromType::histogram;
  }
  if (t == "summary") {
    return PromType::summary;
  }
  if (t == "untyped" || t == "unknown") {
    return PromType::untyped;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> PromSample::label(std::string_view name) const noexcept {
  for (const auto& l : labels) {
    if (l.name == name) {
      return std::string_view(l.value);
    }
  }
  return std::nullopt;
}

Result<void> PromParser::feed_impl(std::string_view bytes, Thunk t, void* ctx) {
  if (failed_) {
    return Errc::prom_too_many_series;
  }
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    const std::string_view part = bytes.substr(0, nl);
    if (skipping_) {
      if (nl == std::string_view::npos) {
        return {};
      }
      skipping_ = false;
      bytes.remove_prefix(nl + 1);
      continue;
    }
    if (line_.size() + part.size() > limits_.max_line_bytes) {
      ++stats_.lines;
      ++stats_.oversized_lines;
      line_.clear();
      skipping_ = nl == std::string_view::npos;
      if (nl == std::string_view::npos) {
        return {};
      }
      bytes.remove_prefix(nl + 1);
      continue;
    }
    if (nl == std::string_view::npos) {
      line_.append(part);
      return {};
    }
    Result<void> r;
    if (line_.empty()) {
      r = process_line(part, t, ctx);
    } else {
      line_.append(part);
      r = process_line(line_, t, ctx);
      line_.clear();
    }
    if (!r) {
      return r;
    }
    bytes.remove_prefix(nl + 1);
  }
  return {};
}

Result<void> PromParser::finish_impl(Thunk t, void* ctx) {
  if (failed_) {
    return Errc::prom_too_many_series;
  }
  skipping_ = false;
  if (line_.empty()) {
    return {};
  }
  std::string last;
  last.swap(line_);
  return process_line(last, t, ctx);
}

Result<void> PromParser::process_line(std::string_view line, Thunk t, void* ctx) {
  ++stats_.lines;
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  skip_blanks(line);
  if (line.empty()) {
    return {};
  }
  if (line.front() == '#') {
    line.remove_prefix(1);
    process_comment(line);
    return {};
  }
  const std::string_view name = take_name(line, true);
  if (name.empty()) {
    ++stats_.garbage_lines;
    return {};
  }
  // Labels are reused from sample to sample (no reallocation); take_labels trims the rest.
  if (line.empty() || line.front() != '{') {
    sample_.labels.clear();
  } else {
    line.remove_prefix(1);
    if (!take_labels(line, sample_, limits_.max_labels)) {
      ++stats_.garbage_lines;
      return {};
    }
  }
  if (line.empty() || !is_blank(line.front())) {
    ++stats_.garbage_lines;
    return {};
  }
  skip_blanks(line);
  const auto value = parse_float(take_token(line));
  if (!value) {
    ++stats_.garbage_lines;
    return {};
  }
  skip_blanks(line);
  std::optional<std::int64_t> ts;
  if (!line.empty()) {
    ts = parse_int(take_token(line));
    skip_blanks(line);
    if (!ts || !line.empty()) {
      ++stats_.garbage_lines;
      return {};
    }
  }
  if (stats_.samples >= limits_.max_series) {
    failed_ = true;
    return Errc::prom_too_many_series;
  }
  sample_.name.assign(name);
  sample_.value = *value;
  sample_.timestamp_ms = ts;
  ++stats_.samples;
  t(ctx, sample_);
  return {};
}

void PromParser::process_comment(std::string_view line) {
  skip_blanks(line);
  const std::string_view keyword = take_token(line);
  if (keyword != "TYPE" && keyword != "HELP") {
    return;  // a plain comment
  }
  skip_blanks(line);
  const std::string_view family = take_token(line);
  skip_blanks(line);
  // Bound the maps too: a hostile scrape could declare endless families.
  if (family.empty() || types_.size() + help_.size() >= 2 * limits_.max_series) {
    ++stats_.garbage_lines;
    return;
  }
  if (keyword == "HELP") {
    help_[std::string(family)] = unescape_help(line);
    return;
  }
  const auto type = parse_type(take_token(line));
  if (!type) {
    ++stats_.garbage_lines;
    return;
  }
  types_[std::string(family)] = *type;
}

PromType PromParser::type_of(std::string_view family) const {
  const auto it = types_.find(std::string(family));
  return it == types_.end() ? PromType::untyped : it->second;
}

std::optional<std::string_view> PromParser::help_of(std::string_view family) const {
  const auto it = help_.find(std::string(family));
  if (it == help_.end()) {
    return std::nullopt;
  }
  return std::string_view(it->second);
}

Result<PromScrape> parse_prometheus(std::string_view text, PromLimits limits) {
  PromParser parser(limits);
  PromScrape out;
  auto collect = [&](const PromSample& s) { out.samples.push_back(s); };
  if (auto r = parser.feed(text, collect); !r) {
    return r.error();
  }
  if (auto r = parser.finish(collect); !r) {
    return r.error();
  }
  out.stats = parser.stats();
  return out;
}

// ---------------------------------------------------------------------------------------------------

const VllmRank* VllmScrape::rank(int engine) const noexcept {
  for (const auto& r : ranks) {
    if (r.engine == engine) {
      return &r;
    }
  }
  return nullptr;
}

namespace {

// The host-offload labels of vllm:cache_config_info (vLLM writes every CacheConfig field, unset ones as
// "None"): kv_offloading_size in GiB ("None" = off), num_cpu_blocks, kv_cache_memory_bytes.
void cache_offload_labels(const PromSample& s, VllmRank& r) {
  if (const auto size = s.label("kv_offloading_size")) {
    if (*size == "None") {
      r.kv_offloading_gib = 0.0;
    } else if (const auto v = parse_float(*size); v && std::isfinite(*v) && *v >= 0) {
      r.kv_offloading_gib = *v;
    }
  }
  const auto count = [&](std::string_view label, std::optional<std::int64_t>& out) {
    if (const auto text = s.label(label)) {
      if (const auto v = parse_int(*text); v && *v >= 0) {
        out = *v;
      }
    }
  };
  count("num_cpu_blocks", r.num_cpu_blocks);
  count("kv_cache_memory_bytes", r.kv_cache_memory_bytes);
}

}  // namespace

std::size_t VllmScrapeBuilder::rank_index(int engine) {
  const auto e = static_cast<std::size_t>(engine);
  if (e >= slot_.size()) {
    slot_.resize(e + 1, 0);
  }
  if (slot_[e] == 0) {
    ranks_.push_back(VllmRank{.engine = engine});
    legacy_.emplace_back();
    slot_[e] = static_cast<std::uint32_t>(ranks_.size());
  }
  return slot_[e] - 1;
}

void VllmScrapeBuilder::add(const PromSample& s) {
  constexpr std::string_view prefix = "vllm:";
  if (!s.name.starts_with(prefix)) {
    return;
  }
  if (!model_name_.empty()) {
    const auto model = s.label("model_name");
    // vLLM's cache_config_info carries the engine's cache settings and no model_name: it belongs to
    // whatever model the engine serves. Any other sample must name this model.
    const bool unlabelled_info = !model && s.name == "vllm:cache_config_info";
    if (!unlabelled_info && model != std::optional<std::string_view>(model_name_)) {
      ++skipped_;
      return;
    }
  }
  int engine = 0;
  if (const auto label = s.label("engine")) {
    const auto v = parse_int(*label);
    // Ranks are small integers; anything else is not a rank we can route to (and a bound keeps the
    // rank index small whatever a hostile scrape says).
    if (!v || *v < 0 || *v >= kMaxEngines) {
      ++skipped_;
      return;
    }
    engine = static_cast<int>(*v);
  }
  const std::string_view name = std::string_view(s.name).substr(prefix.size());
  auto set = [&](std::optional<double> VllmRank::*field) { ranks_[rank_index(engine)].*field = s.value; };
  auto set_legacy = [&](std::optional<double> Legacy::*field) {
    legacy_[rank_index(engine)].*field = s.value;
  };
  if (name == "num_requests_running") {
    set(&VllmRank::num_requests_running);
  } else if (name == "num_requests_waiting") {
    set(&VllmRank::num_requests_waiting);
  } else if (name == "kv_cache_usage_perc") {
    set(&VllmRank::kv_cache_usage_perc);
  } else if (name == "prefix_cache_queries_total") {
    set(&VllmRank::prefix_cache_queries_total);
  } else if (name == "prefix_cache_hits_total") {
    set(&VllmRank::prefix_cache_hits_total);
  } else if (name == "external_prefix_cache_hits_total") {
    set(&VllmRank::external_prefix_cache_hits_total);
  } else if (name == "prompt_tokens_total") {
    set(&VllmRank::prompt_tokens_total);
  } else if (name == "generation_tokens_total") {
    set(&VllmRank::generation_tokens_total);
  } else if (name == "num_preemptions_total") {
    set(&VllmRank::num_preemptions_total);
  } else if (name == "gpu_cache_usage_perc") {
    set_legacy(&Legacy::gpu_cache_usage_perc);
  } else if (name == "gpu_prefix_cache_queries_total") {
    set_legacy(&Legacy::gpu_prefix_cache_queries_total);
  } else if (name == "gpu_prefix_cache_hits_total") {
    set_legacy(&Legacy::gpu_prefix_cache_hits_total);
  } else if (name == "cache_config_info") {
    VllmRank& r = ranks_[rank_index(engine)];
    if (const auto bs = s.label("block_size")) {
      if (const auto v = parse_int(*bs); v && *v > 0) {
        r.block_size = *v;
      }
    }
    if (const auto nb = s.label("num_gpu_blocks")) {
      if (const auto v = parse_int(*nb); v && *v >= 0) {
        r.num_gpu_blocks = *v;
      }
    }
    cache_offload_labels(s, r);
  }
}

VllmScrape VllmScrapeBuilder::take() {
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    VllmRank& r = ranks_[i];
    const Legacy& l = legacy_[i];
    if (!r.kv_cache_usage_perc) {
      r.kv_cache_usage_perc = l.gpu_cache_usage_perc;
    }
    if (!r.prefix_cache_queries_total) {
      r.prefix_cache_queries_total = l.gpu_prefix_cache_queries_total;
    }
    if (!r.prefix_cache_hits_total) {
      r.prefix_cache_hits_total = l.gpu_prefix_cache_hits_total;
    }
  }
  VllmScrape out;
  out.ranks = std::move(ranks_);
  out.skipped_samples = skipped_;
  std::sort(out.ranks.begin(), out.ranks.end(),
            [](const VllmRank& a, const VllmRank& b) { return a.engine < b.engine; });
  ranks_.clear();
  legacy_.clear();
  slot_.clear();
  skipped_ = 0;
  return out;
}

Result<VllmScrape> parse_vllm_metrics(std::string_view text, std::string_view model_name, PromLimits limits) {
  PromParser parser(limits);
  VllmScrapeBuilder builder{std::string(model_name)};
  auto add = [&](const PromSample& s) { builder.add(s); };
  if (auto r = parser.feed(text, add); !r) {
    return r.error();
  }
  if (auto r = parser.finish(add); !r) {
    return r.error();
  }
  VllmScrape out = builder.take();
  out.stats = parser.stats();
  return out;
}

}  // namespace warden::protocol
