// The warden's series of its replicas' KV cache events (docs/api.md, "Metrics"): one per listened-to
// replica each, from its KvFeed at render time.
#include <fmt/format.h>

#include <array>
#include <iterator>

#include "gateway/runtime/warden_metrics.hpp"

namespace warden::gateway {

namespace {

struct KvSeries {
  std::string_view name;
  std::string_view type;
  std::string_view help;
  double (*value)(const KvReplicaGauges&);
};

template <class T>
double num(T v) {
  return static_cast<double>(v);
}

constexpr std::array<KvSeries, 14> kKvSeries{{
    {"lm_warden_kv_exact", "gauge",
     "1 while the replica's KV cache events are live and whole (the Router reads its index), 0 while it "
     "falls back to the warden's estimate (no events yet, a gap being replayed, the publisher gone or "
     "silent while the engine works).",
     [](const KvReplicaGauges& k) { return k.exact ? 1.0 : 0.0; }},
    {"lm_warden_kv_index_complete", "gauge",
     "1 when the replica's index has seen every block its engine holds (its events since the engine "
     "started or reset its cache), 0 after it joined late or lost a gap.",
     [](const KvReplicaGauges& k) { return k.complete ? 1.0 : 0.0; }},
    {"lm_warden_kv_publisher_connected", "gauge",
     "1 while the warden is connected to the replica's publisher.",
     [](const KvReplicaGauges& k) { return k.connected ? 1.0 : 0.0; }},
    {"lm_warden_kv_resident_tokens", "gauge",
     "Tokens in the replica's GPU prefix cache, as its events tell it.",
     [](const KvReplicaGauges& k) { return num(k.resident_tokens); }},
    {"lm_warden_kv_index_bytes", "gauge", "Memory the replica's index holds (an estimate).",
     [](const KvReplicaGauges& k) { return num(k.index_bytes); }},
    {"lm_warden_kv_batches_total", "counter", "Event batches applied to the replica's index.",
     [](const KvReplicaGauges& k) { return num(k.counts.batches); }},
    {"lm_warden_kv_events_total", "counter", "Events in those batches.",
     [](const KvReplicaGauges& k) { return num(k.counts.events); }},
    {"lm_warden_kv_blocks_stored_total", "counter", "Blocks the replica's BlockStored events announced.",
     [](const KvReplicaGauges& k) { return num(k.counts.stored_blocks); }},
    {"lm_warden_kv_blocks_removed_total", "counter", "Blocks the replica's BlockRemoved events announced.",
     [](const KvReplicaGauges& k) { return num(k.counts.removed_blocks); }},
    {"lm_warden_kv_decode_errors_total", "counter",
     "Messages of the replica's publisher that did not decode (malformed, truncated): counted and dropped.",
     [](const KvReplicaGauges& k) { return num(k.counts.decode_errors); }},
    {"lm_warden_kv_gaps_total", "counter", "Gaps in the replica's sequence numbers.",
     [](const KvReplicaGauges& k) { return num(k.counts.gaps); }},
    {"lm_warden_kv_replays_total", "counter",
     "Replays asked of the replica's publisher (gaps and late joins).",
     [](const KvReplicaGauges& k) { return num(k.counts.replays); }},
    {"lm_warden_kv_clears_total", "counter",
     "Times the replica's index was cleared: its publisher restarted, a gap no replay covered, or the "
     "engine reset its cache.",
     [](const KvReplicaGauges& k) { return num(k.counts.clears); }},
    {"lm_warden_kv_fallbacks_total", "counter",
     "Times the replica stopped being exact (the Router fell back to the estimate).",
     [](const KvReplicaGauges& k) { return num(k.counts.fallbacks); }},
}};

// The lag as a histogram (cumulative buckets, Prometheus' `le`), so that its quantiles can be read.
void render_kv_lag(std::string& o, const std::vector<ReplicaGauges>& replicas) {
  const auto out = std::back_inserter(o);
  constexpr std::string_view lag = "lm_warden_kv_lag_seconds";
  fmt::format_to(out,
                 "# HELP {} From a batch's timestamp (the engine's clock) to its application to the index.\n"
                 "# TYPE {} histogram\n",
                 lag, lag);
  for (const ReplicaGauges& r : replicas) {
    if (!r.kv) {
      continue;
    }
    const std::string labels =
        fmt::format("model=\"{}\",replica=\"{}\"", prometheus_escape(r.model), r.replica);
    const KvFeedCounts& c = r.kv->counts;
    std::uint64_t below = 0;
    for (std::size_t i = 0; i < kKvLagBounds.size(); ++i) {
      below += c.lag_buckets[i];
      fmt::format_to(out, "{}_bucket{{{},le=\"{}\"}} {}\n", lag, labels, kKvLagBounds[i], below);
    }
    fmt::format_to(out, "{}_bucket{{{},le=\"+Inf\"}} {}\n", lag, labels, c.lag_count);
    fmt::format_to(out, "{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", lag, labels, c.lag_sum, lag, labels,
                   c.lag_count);
  }
}

}  // namespace

std::optional<KvReplicaGauges> kv_gauges(const KvFeed& feed) {
  const core::KvIndex* index = feed.index();
  if (!index) {
    return std::nullopt;
  }
  KvReplicaGauges g;
  g.counts = feed.counts();
  g.exact = feed.exact();
  g.complete = index->complete();
  g.connected = feed.connected();
  g.resident_tokens = index->resident_tokens();
  g.index_bytes = index->stats().bytes;
  return g;
}

void render_kv_metrics(std::string& o, const std::vector<ReplicaGauges>& replicas) {
  const auto out = std::back_inserter(o);
  for (const KvSeries& s : kKvSeries) {
    fmt::format_to(out, "# HELP {} {}\n# TYPE {} {}\n", s.name, s.help, s.name, s.type);
    for (const ReplicaGauges& r : replicas) {
      if (r.kv) {
        fmt::format_to(out, "{}{{model=\"{}\",replica=\"{}\"}} {}\n", s.name, prometheus_escape(r.model),
                       r.replica, s.value(*r.kv));
      }
    }
  }
  render_kv_lag(o, replicas);
}

}  // namespace warden::gateway
