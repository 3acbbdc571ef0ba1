// The Prometheus parser: fed in any fragmentation it gives the same samples and counts as fed whole, every
// sample written back in the text format parses to itself, and the vLLM extraction takes whatever the
// parser gives. Input: flags byte, split seed byte, then the exposition text.

#include "fuzz/fuzz_support.hpp"
#include "protocol/prometheus.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace warden::protocol;

struct Parsed {
  std::vector<PromSample> samples;
  PromStats stats;
  bool failed = false;
};

Parsed parse(const std::vector<std::string_view>& pieces, PromLimits limits) {
  PromParser p(limits);
  Parsed out;
  auto on = [&](const PromSample& s) { out.samples.push_back(s); };
  for (std::string_view piece : pieces) {
    if (!p.feed(piece, on)) {
      out.failed = true;
      break;
    }
  }
  if (!out.failed) {
    out.failed = !p.finish(on);
  }
  out.stats = p.stats();
  return out;
}

bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

bool same_sample(const PromSample& a, const PromSample& b) {
  if (a.name != b.name || !same_value(a.value, b.value) || a.timestamp_ms != b.timestamp_ms ||
      a.labels.size() != b.labels.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.labels.size(); ++i) {
    if (a.labels[i].name != b.labels[i].name || a.labels[i].value != b.labels[i].value) {
      return false;
    }
  }
  return true;
}

std::string render(const PromSample& s) {
  std::string out = s.name + "{";
  for (const PromLabel& l : s.labels) {
    out += l.name + "=\"";
    for (char c : l.value) {
      out += c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : std::string(1, c);
    }
    out += "\",";
  }
  out += "} ";
  if (std::isnan(s.value)) {
    out += "NaN";
  } else if (std::isinf(s.value)) {
    out += s.value > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", s.value);
    out += buf;
  }
  if (s.timestamp_ms) {
    out += " " + std::to_string(*s.timestamp_ms);
  }
  return out + "\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  warden::fuzz::Input in(data, size);
  const std::uint8_t flags = in.byte();
  const std::uint8_t seed = in.byte();
  const std::string_view text = in.rest();
  PromLimits limits;
  if ((flags & 1) != 0) {  // small enough for inputs to reach them
    limits.max_line_bytes = 8 + flags;
    limits.max_series = 1 + flags % 16;
    limits.max_labels = flags % 8;
  }

  const Parsed whole = parse({text}, limits);
  const Parsed cut = parse(warden::fuzz::split(text, seed), limits);
  FUZZ_CHECK(cut.failed == whole.failed);
  FUZZ_CHECK(cut.samples.size() == whole.samples.size());
  for (std::size_t i = 0; i < whole.samples.size(); ++i) {
    FUZZ_CHECK(same_sample(cut.samples[i], whole.samples[i]));
  }
  if (!whole.failed) {
    FUZZ_CHECK(cut.stats.lines == whole.stats.lines);
    FUZZ_CHECK(cut.stats.garbage_lines == whole.stats.garbage_lines);
    FUZZ_CHECK(cut.stats.oversized_lines == whole.stats.oversized_lines);
    FUZZ_CHECK(whole.stats.samples == whole.samples.size());
  }
  for (const PromSample& s : whole.samples) {
    FUZZ_CHECK(!s.name.empty());
    FUZZ_CHECK(s.labels.size() <= limits.max_labels);
    const auto back = parse_prometheus(render(s));
    FUZZ_CHECK(back && back->samples.size() == 1 && same_sample(back->samples[0], s));
  }
  const auto vllm = parse_vllm_metrics(text, (flags & 2) != 0 ? "m" : "", limits);
  FUZZ_CHECK(vllm.has_value() != whole.failed);
  if (vllm) {
    for (std::size_t i = 1; i < vllm->ranks.size(); ++i) {
      FUZZ_CHECK(vllm->ranks[i - 1].engine < vllm->ranks[i].engine);
    }
  }
  return 0;
}
