// One row of the reference table (routing.md), and the recorder that produces it for one level.
// Pure: times are model seconds passed in by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warden::report {

// The stable JSON row schema shared by `bench` and `simulate` (docs/bench.md). Times in seconds, shares in
// percent; an empty optional is JSON null ("does not apply" or "not measured").
struct Row {
  std::string policy;  // "off"/"on" in a comparison, or a policy name
  int sessions = 0;    // concurrency level
  std::optional<double> sessions_per_hour;
  std::optional<double> output_tokens_per_min;
  std::optional<double> ttfb_p50;
  std::optional<double> ttfb_p95;
  std::optional<double> replicas_busy;
  std::optional<double> prefix_hits;
  std::optional<double> stayed_on_replica;
  std::optional<std::int64_t> errors;
  // Agent tasks (a user prompt to its final text reply): none for workloads without tasks.
  std::optional<double> tasks_per_hour;
  std::optional<double> task_time_p50;
  std::optional<double> task_time_p95;
  // Requests whose cached tokens the warden expected within one cache block of what the engine reported
  // (%): whether it knows what the engine will serve. Only where the expectation was recorded.
  std::optional<double> expected_cached;

  bool operator==(const Row&) const = default;
};

// Percentile by linear interpolation between closest ranks (NumPy's default, Hyndman-Fan type 7):
// rank = p/100 * (n-1). `p` in [0, 100]; none for an empty sample. The input need not be sorted.
std::optional<double> percentile(std::vector<double> values, double p);

// vLLM prefix-cache counters summed over ranks (vllm:prefix_cache_hits_total / _queries_total).
struct PrefixCounters {
  double hits = 0.0;
  double queries = 0.0;
};

// One finished (or failed) request, as the driver saw it.
struct RequestRecord {
  double started_at = 0.0;            // model seconds, when the request was sent
  double ended_at = 0.0;              // model seconds, when its response ended (or it failed)
  std::optional<double> ttfb;         // seconds from send to the first streamed content token
  std::int64_t output_tokens = 0;     // from the usage the engine reported
  bool ok = true;                     // false: transport error, HTTP error, or broken stream
  std::size_t turn = 0;               // 0 = the session's first turn; > 0 = a follow-up
  bool session_finished = false;      // this was its session's last turn
  std::optional<std::string> route;   // x-warden-route, when the request went through a warden
  std::uint64_t session_index = 0;    // which session (workload session index)
  std::optional<int> replica;         // x-warden-replica (or the replica a simulation chose), if known
  std::optional<std::size_t> target;  // which of several targets (wardens) the request was sent to
  // This request's reply ended an agent task, which began when its first request was sent.
  std::optional<double> task_started_at;
  // The cached tokens the warden expected on the replica it chose came within one cache block of what the
  // engine reported (cached_tokens); none when either is unknown.
  std::optional<bool> expected_cached_ok;
  // Agentic workload: the first request of an agent task (workload::is_task_start), how long the warden
  // held it (x-warden-queued, model seconds; none when it was not held), and its agent's group (bench
  // --interactive, --tenants; none without groups).
  bool task_start = false;
  std::optional<double> queued;
  std::optional<std::size_t> group;
};

// One JSON object per line for every record of a level (for analysis beyond the table):
// {"policy","sessions","session","turn","started_at","ended_at","ttfb","output_tokens","ok","route","replica",
//  "target"}.
std::string records_jsonl(std::string_view policy, int sessions, const std::vector<RequestRecord>& records);

// Snapshot for a progress line.
struct Progress {
  std::size_t requests = 0;
  std::size_t sessions_finished = 0;
  std::size_t errors = 0;
  std::optional<double> ttfb_p50;
};

// What counts as a follow-up that stayed on its replica:
// - route: the warden said "sticky" (x-warden-route), among follow-ups routed other than "balanced";
// - replica: it was served by the replica of its session's previous turn (x-warden-replica), among
//   follow-ups routed other than "balanced" whose previous turn's replica is known. The measure for
//   several wardens: each one's route reflects only what that warden knows of the conversation.
enum class StayedBy : std::uint8_t { route, replica };

// Accumulates one level [begin, end) and turns it into a Row:
// - Sessions/h = sessions whose last turn ended inside the window x 3600 / window length;
// - Output tokens/min = output tokens of requests that ended inside the window x 60 / window length;
// - TTFB p50/p95 over every request started in the level that received a first token (including those
//   that end after the window, while the driver drains);
// - Replicas busy = mean of the busy-replica samples;
// - Prefix hits = (hits_end - hits_start) / (queries_end - queries_start) x 100;
// - Stayed on replica = follow-ups that stayed (StayedBy) / follow-ups that carried a route other than
//   "balanced" (affinity off: no home replica), x 100; none without a warden or with affinity off;
// - Errors = failed requests of the level;
// - Tasks/h = agent tasks whose final reply ended inside the window x 3600 / window length; task time
//   p50/p95 over every task that ended in the level (final reply received - first request sent), drain
//   included as for TTFB; none when no request ended a task (workloads without tasks).
class LevelRecorder {
 public:
  LevelRecorder(std::string policy, int sessions, StayedBy stayed_by = StayedBy::route)
      : policy_(std::move(policy)), sessions_(sessions), stayed_by_(stayed_by) {}

  void begin(double now) { begin_ = now; }
  // End of the measuring window; records may still arrive afterwards (drain) and count for TTFB/errors.
  void end(double now) { end_ = now; }

  void record(const RequestRecord& r);
  void add_busy_sample(int busy_replicas);
  void set_prefix_start(const PrefixCounters& c) { prefix_start_ = c; }
  void set_prefix_end(const PrefixCounters& c) { prefix_end_ = c; }

  // The row; before end() the window is taken to run up to `now`.
  Row row(std::optional<double> now = std::nullopt) const;
  Progress progress() const;

  const std::string& policy() const { return policy_; }
  int sessions() const { return sessions_; }
  double begin_time() const { return begin_; }
  std::optional<double> end_time() const { return end_; }
  const std::vector<RequestRecord>& records() const { return records_; }

 private:
  struct Stayed {
    std::size_t follow_ups = 0;
    std::size_t stayed = 0;
  };
  Stayed count_stayed() const;

  std::string policy_;
  int sessions_;
  StayedBy stayed_by_;
  double begin_ = 0.0;
  std::optional<double> end_;
  std::vector<RequestRecord> records_;
  std::vector<double> ttfbs_;
  std::size_t sessions_finished_ = 0;
  std::size_t errors_ = 0;
  double busy_sum_ = 0.0;
  std::size_t busy_samples_ = 0;
  std::optional<PrefixCounters> prefix_start_;
  std::optional<PrefixCounters> prefix_end_;
};

}  // namespace warden::report
