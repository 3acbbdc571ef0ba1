#include "report/row.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include <boost/json.hpp>

namespace warden::report {

std::optional<double> percentile(std::vector<double> values, double p) {
  if (values.empty()) {
    return std::nullopt;
  }
  std::sort(values.begin(), values.end());
  const double clamped = std::clamp(p, 0.0, 100.0);
  const double rank = clamped / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

std::string records_jsonl(std::string_view policy, int sessions, const std::vector<RequestRecord>& records) {
  std::string out;
  for (const RequestRecord& r : records) {
    boost::json::object o;
    o["policy"] = policy;
    o["sessions"] = sessions;
    o["session"] = r.session_index;
    o["turn"] = r.turn;
    o["started_at"] = r.started_at;
    o["ended_at"] = r.ended_at;
    o["ttfb"] = r.ttfb ? boost::json::value(*r.ttfb) : boost::json::value(nullptr);
    o["output_tokens"] = r.output_tokens;
    o["ok"] = r.ok;
    o["route"] = r.route ? boost::json::value(*r.route) : boost::json::value(nullptr);
    o["replica"] = r.replica ? boost::json::value(*r.replica) : boost::json::value(nullptr);
    o["target"] = r.target ? boost::json::value(*r.target) : boost::json::value(nullptr);
    if (r.task_started_at) {
      o["task_started_at"] = *r.task_started_at;
    }
    out += boost::json::serialize(o);
    out += '\n';
  }
  return out;
}

void LevelRecorder::record(const RequestRecord& r) {
  records_.push_back(r);
  if (r.ok && r.ttfb) {
    ttfbs_.push_back(*r.ttfb);
  }
  if (r.ok && r.session_finished) {
    ++sessions_finished_;
  }
  if (!r.ok) {
    ++errors_;
  }
}

void LevelRecorder::add_busy_sample(int busy_replicas) {
  busy_sum_ += static_cast<double>(std::max(busy_replicas, 0));
  ++busy_samples_;
}

Progress LevelRecorder::progress() const {
  Progress p;
  p.requests = records_.size();
  p.sessions_finished = sessions_finished_;
  p.errors = errors_;
  p.ttfb_p50 = percentile(ttfbs_, 50.0);
  return p;
}

LevelRecorder::Stayed LevelRecorder::count_stayed() const {
  Stayed s;
  // Replica of each session's latest successful turn: a session's turns complete in order.
  std::unordered_map<std::uint64_t, std::pair<std::size_t, std::optional<int>>> previous;
  for (const RequestRecord& r : records_) {
    if (!r.ok) {
      continue;
    }
    // Known when this follows its session's previous turn and both replicas are known.
    bool replica_known = false;
    bool same_replica = false;
    if (const auto before = previous.find(r.session_index); before != previous.end() &&
                                                            before->second.first + 1 == r.turn &&
                                                            before->second.second && r.replica) {
      replica_known = true;
      same_replica = *before->second.second == *r.replica;
    }
    previous[r.session_index] = {r.turn, r.replica};
    // "balanced" = affinity off: the conversation has no home replica to stay on, so it does not count.
    if (r.turn == 0 || !r.route || *r.route == "balanced") {
      continue;
    }
    if (stayed_by_ == StayedBy::route) {
      ++s.follow_ups;
      s.stayed += *r.route == "sticky" ? 1 : 0;
    } else if (replica_known) {
      ++s.follow_ups;
      s.stayed += same_replica ? 1 : 0;
    }
  }
  return s;
}

Row LevelRecorder::row(std::optional<double> now) const {
  Row row;
  row.policy = policy_;
  row.sessions = sessions_;
  const double window_end = end_ ? *end_ : now.value_or(begin_);
  const double duration = window_end - begin_;

  std::int64_t output_tokens = 0;
  std::size_t sessions_finished = 0;
  std::size_t tasks_finished = 0;
  std::vector<double> task_times;
  std::size_t expected = 0;
  std::size_t expected_ok = 0;
  for (const RequestRecord& r : records_) {
    if (!r.ok) {
      continue;
    }
    if (r.expected_cached_ok) {
      ++expected;
      expected_ok += *r.expected_cached_ok ? 1 : 0;
    }
    if (r.task_started_at) {
      task_times.push_back(r.ended_at - *r.task_started_at);
      tasks_finished += r.ended_at <= window_end ? 1 : 0;
    }
    // Throughput counts only what ended inside the window, so a drain after the window adds nothing.
    if (r.ended_at <= window_end) {
      output_tokens += r.output_tokens;
      if (r.session_finished) {
        ++sessions_finished;
      }
    }
  }
  if (duration > 0.0) {
    row.sessions_per_hour = static_cast<double>(sessions_finished) * 3600.0 / duration;
    row.output_tokens_per_min = static_cast<double>(output_tokens) * 60.0 / duration;
  }
  row.ttfb_p50 = percentile(ttfbs_, 50.0);
  row.ttfb_p95 = percentile(ttfbs_, 95.0);
  if (busy_samples_ > 0) {
    row.replicas_busy = busy_sum_ / static_cast<double>(busy_samples_);
  }
  if (prefix_start_ && prefix_end_) {
    const double queries = prefix_end_->queries - prefix_start_->queries;
    const double hits = prefix_end_->hits - prefix_start_->hits;
    // A counter reset (engine restarted) shows as a negative delta: not measurable, not a number.
    if (queries > 0.0 && hits >= 0.0) {
      row.prefix_hits = std::min(hits / queries, 1.0) * 100.0;
    }
  }
  if (const Stayed s = count_stayed(); s.follow_ups > 0) {
    row.stayed_on_replica = static_cast<double>(s.stayed) * 100.0 / static_cast<double>(s.follow_ups);
  }
  row.errors = static_cast<std::int64_t>(errors_);
  if (expected > 0) {
    row.expected_cached = static_cast<double>(expected_ok) * 100.0 / static_cast<double>(expected);
  }
  if (!task_times.empty()) {
    if (duration > 0.0) {
      row.tasks_per_hour = static_cast<double>(tasks_finished) * 3600.0 / duration;
    }
    row.task_time_p50 = percentile(task_times, 50.0);
    row.task_time_p95 = percentile(task_times, 95.0);
  }
  return row;
}

}  // namespace warden::report
