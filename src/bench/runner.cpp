#include "bench/runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>

#include "bench/metrics.hpp"
#include "bench/placement_fields.hpp"
#include "bench/stream.hpp"
#include "net/client.hpp"
#include "protocol/prometheus.hpp"
#include "report/side_by_side.hpp"
#include "report/svg.hpp"
#include "workload/make_loop.hpp"

namespace warden::bench {

namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using namespace asio::experimental::awaitable_operators;
using Clock = std::chrono::steady_clock;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Errors logged in full per level; after that they are only counted (the Errors column).
constexpr std::size_t kLoggedErrorsPerLevel = 5;

// One concurrency level of one pass: its closed loop, recorder and the coroutines working on it.
struct Level {
  Level(const workload::Workload& w, const std::string& policy_label, int sessions, double now,
        std::uint64_t first_index, StayedBy stayed_by, std::size_t targets, asio::any_io_executor ex)
      : policy(policy_label),
        recorder(policy_label, sessions, stayed_by),
        loop(workload::make_loop(w, static_cast<std::size_t>(sessions), now, first_index)),
        wake(ex),
        cancel(loop->slots()),
        sent(targets, 0) {
    for (auto& c : cancel) {
      c = std::make_unique<asio::cancellation_signal>();
    }
  }

  std::string policy;
  report::LevelRecorder recorder;
  std::unique_ptr<workload::Loop> loop;
  asio::steady_timer wake;  // the driver sleeps on it; a finished turn cancels it to wake the driver
  std::vector<std::unique_ptr<asio::cancellation_signal>> cancel;  // per slot, for the drain timeout
  std::size_t active = 0;                                          // turn coroutines still running
  std::size_t errors_logged = 0;
  std::vector<std::size_t> sent;  // requests sent to each target
  // Its groups of agents (--interactive, --tenants; none without) and each agent's group.
  std::vector<report::AgentGroup> groups;
  std::vector<std::size_t> group_of_agent;
};

class Runner {
 public:
  Runner(asio::io_context& ioc, const BenchOptions& o, std::FILE* log)
      : ioc_(ioc),
        options_(o),
        log_(log),
        tty_(::isatty(::fileno(log)) != 0),
        workload_(o.workload),
        pool_(ioc.get_executor()),
        api_(o.api == Api::anthropic ? protocol::ApiKind::anthropic_messages
                                     : protocol::ApiKind::openai_chat),
        start_(Clock::now()) {}

  asio::awaitable<void> main();
  void interrupt();

  BenchOutcome& outcome() { return outcome_; }

 private:
  double now() const {
    return std::chrono::duration<double>(Clock::now() - start_).count() * options_.time_scale;
  }
  Clock::duration wall(double model_seconds) const {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::max(model_seconds, 0.0) / options_.time_scale));
  }
  void fail(std::string error) {
    outcome_.failed = true;
    outcome_.error = std::move(error);
  }

  asio::awaitable<bool> set_affinity(const std::string& warden, bool on);
  bool resolve_targets();
  void print_setup();
  asio::awaitable<std::optional<MetricsSample>> scrape();
  asio::awaitable<std::uint64_t> run_level(const std::string& policy, int sessions,
                                           std::uint64_t first_index);
  asio::awaitable<void> drive(Level& level, double end);
  asio::awaitable<void> drain(Level& level);
  asio::awaitable<void> sample(Level& level);
  asio::awaitable<void> progress(Level& level, double end);
  asio::awaitable<void> turn(Level& level, std::size_t slot);
  void assign_groups(Level& level, std::size_t headless) const;
  void mark_group(const Level& level, std::size_t slot, workload::HttpRequestSpec& spec,
                  report::RequestRecord& rec) const;
  // What came of one request sent to a target: a whole reply read into `reader` (ok), or why not.
  struct Exchanged {
    bool ok = false;
    bool cancelled = false;  // the request was cut by this process (Ctrl-C, the drain timeout)
    std::string problem;
    // The warden's x-warden-expected-cached: the cached tokens it expected, and the replica's block size.
    std::optional<std::uint64_t> expected_cached;
    std::uint64_t expected_block = 0;
  };
  asio::awaitable<Exchanged> exchange(std::size_t target, const workload::HttpRequestSpec& spec,
                                      StreamReader& reader, report::RequestRecord& rec);
  // A 200's stream read into `reader`; a held stream's placement comment into `placed`.
  asio::awaitable<void> read_stream(net::UpstreamResponse& up, StreamReader& reader,
                                    report::RequestRecord& rec, PlacementFields& placed, Exchanged& x);
  asio::awaitable<void> sleep_model(asio::steady_timer& t, double model_seconds);
  void print_progress(const Level& level, double end, bool final_line);

  asio::io_context& ioc_;
  const BenchOptions& options_;
  std::FILE* log_;
  bool tty_;
  workload::Workload workload_;
  net::ClientPool pool_;
  protocol::ApiKind api_;
  Clock::time_point start_;
  std::vector<net::Endpoint> targets_;
  std::vector<std::pair<net::Endpoint, std::string>> metrics_;  // endpoint, path
  Level* current_ = nullptr;
  bool interrupted_ = false;
  bool warned_no_ranks_ = false;
  BenchOutcome outcome_;
};

void Runner::interrupt() {
  if (interrupted_) {
    return;
  }
  interrupted_ = true;
  outcome_.interrupted = true;
  if (current_ != nullptr) {
    current_->wake.cancel();
  }
}

asio::awaitable<void> Runner::sleep_model(asio::steady_timer& t, double model_seconds) {
  t.expires_after(wall(model_seconds));
  co_await t.async_wait(use_tuple);
}

asio::awaitable<bool> Runner::set_affinity(const std::string& warden, bool on) {
  auto ep = net::parse_http_url(warden);
  if (!ep) {
    fail(fmt::format("--warden '{}' is not an http://host:port URL", warden));
    co_return false;
  }
  net::Request req{http::verb::patch, routing_admin_path(options_.model), 11};
  req.set(http::field::content_type, "application/json");
  if (!options_.admin_token.empty()) {
    req.set(http::field::authorization, "Bearer " + options_.admin_token);
  }
  req.body() = on ? R"({"affinity": true})" : R"({"affinity": false})";
  req.prepare_payload();
  auto r = co_await pool_.send(*ep, std::move(req));
  if (!r) {
    fail(fmt::format("admin API at {}: {}", warden, r.error().message()));
    co_return false;
  }
  // Read the status first: the response gives its connection back once the body is read.
  const unsigned status = r->status();
  auto body = co_await r->read_all(1 << 20);
  if (status / 100 != 2) {
    fail(fmt::format("admin API at {} refused to set affinity {} for model '{}': HTTP {} {}", warden,
                     on ? "on" : "off", options_.model, status, body ? body->substr(0, 300) : std::string()));
    co_return false;
  }
  fmt::print(log_, "affinity {} for model {} (PATCH {}{})\n", on ? "on" : "off", options_.model, warden,
             routing_admin_path(options_.model));
  co_return true;
}

asio::awaitable<std::optional<MetricsSample>> Runner::scrape() {
  std::vector<protocol::VllmScrape> scrapes;
  for (const auto& [ep, path] : metrics_) {
    net::Request req{http::verb::get, path, 11};
    net::ClientTimeouts t;
    t.first_byte = std::chrono::seconds(10);
    t.idle = std::chrono::seconds(10);
    auto r = co_await pool_.send(ep, std::move(req), t);
    if (!r || r->status() != 200) {
      co_return std::nullopt;
    }
    auto body = co_await r->read_all(16u << 20);
    if (!body) {
      co_return std::nullopt;
    }
    // No model filter: behind a warden the served name may differ from the name the client sends.
    auto parsed = protocol::parse_vllm_metrics(*body);
    if (!parsed) {
      co_return std::nullopt;
    }
    scrapes.push_back(std::move(*parsed));
  }
  MetricsSample sample = summarize(scrapes);
  if (sample.ranks == 0 && !warned_no_ranks_) {
    warned_no_ranks_ = true;
    fmt::print(
        log_,
        "no vllm: series at {}: replicas busy and prefix hits need the engines' /metrics (--metrics; a "
        "warden's own /metrics has none)\n",
        fmt::join(metrics_urls(options_), ", "));
  }
  co_return sample;
}

asio::awaitable<Runner::Exchanged> Runner::exchange(std::size_t target, const workload::HttpRequestSpec& spec,
                                                    StreamReader& reader, report::RequestRecord& rec) {
  Exchanged x;
  try {
    net::Request req{http::verb::post, spec.target, 11};
    for (const auto& [name, value] : spec.headers) {
      req.set(name, value);
    }
    req.body() = spec.body;
    req.prepare_payload();
    auto r = co_await pool_.send(targets_[target], std::move(req));
    if (!r) {
      x.cancelled = r.error() == asio::error::operation_aborted;
      x.problem = r.error().message();
    } else {
      net::UpstreamResponse& up = *r;
      PlacementFields placed;
      for (const char* name :
           {"x-warden-route", "x-warden-replica", "x-warden-expected-cached", "x-warden-queued"}) {
        if (auto f = up.header().find(name); f != up.header().end()) {
          placed.take(name, f->value());
        }
      }
      if (const unsigned status = up.status(); status != 200) {
        auto body = co_await up.read_all(64 << 10);
        x.problem = fmt::format("HTTP {}: {}", status, body ? body->substr(0, 200) : std::string());
      } else {
        co_await read_stream(up, reader, rec, placed, x);
      }
      if (placed.route) {
        rec.route = *placed.route;
      }
      if (placed.replica) {
        rec.replica = *placed.replica;
      }
      x.expected_cached = placed.expected_cached;
      x.expected_block = placed.expected_block;
      if (placed.queued) {
        rec.queued = *placed.queued * options_.time_scale;  // the warden's wall seconds, in model time
      }
    }
  } catch (const boost::system::system_error& e) {
    x.cancelled = e.code() == asio::error::operation_aborted;
    x.problem = e.what();
  } catch (const std::exception& e) {
    x.problem = e.what();
  }
  co_return x;
}

asio::awaitable<void> Runner::read_stream(net::UpstreamResponse& up, StreamReader& reader,
                                          report::RequestRecord& rec, PlacementFields& placed, Exchanged& x) {
  // A held stream: where it went comes as comment lines before its first event.
  std::optional<PlacementComment> held;
  if (placed.route == "queued") {
    held.emplace();
  }
  while (true) {
    auto piece = co_await up.next();
    if (!piece) {
      x.cancelled = piece.error() == asio::error::operation_aborted;
      x.problem = piece.error().message();
      co_return;
    }
    if (piece->done) {
      x.ok = reader.finish();
      if (!x.ok) {
        x.problem = reader.error_text();
      }
      co_return;
    }
    if (held && held->feed(piece->data)) {
      if (held->found()) {
        placed = held->fields();
      }
      held.reset();
    }
    if (reader.feed(piece->data)) {
      rec.ttfb = now() - rec.started_at;
    }
  }
}

// The level's groups of agents: each tenant's headless agents (or the headless ones as one), then the
// interactive sessions (the loop's last agents); none without --tenants or --interactive.
void Runner::assign_groups(Level& level, std::size_t headless) const {
  const std::size_t interactive = workload_.agentic() ? workload_.config().agentic.interactive : 0;
  if (interactive == 0 && options_.tenants.empty()) {
    return;
  }
  if (options_.tenants.empty()) {
    level.groups.push_back({"headless", headless});
    level.group_of_agent.assign(headless, 0);
  } else {
    level.group_of_agent = workload::split_between_tenants(headless, options_.tenants);
    for (std::size_t t = 0; t < options_.tenants.size(); ++t) {
      const auto n = std::count(level.group_of_agent.begin(), level.group_of_agent.end(), t);
      level.groups.push_back({fmt::format("tenant {}", t + 1), static_cast<std::size_t>(n)});
    }
  }
  if (interactive > 0) {
    level.group_of_agent.insert(level.group_of_agent.end(), interactive, level.groups.size());
    level.groups.push_back({"interactive", interactive});
  }
}

// The request's group in the record, and its tenant's header.
void Runner::mark_group(const Level& level, std::size_t slot, workload::HttpRequestSpec& spec,
                        report::RequestRecord& rec) const {
  const std::size_t agent = level.loop->session_of(slot);
  if (agent >= level.group_of_agent.size()) {
    return;
  }
  rec.group = level.group_of_agent[agent];
  if (*rec.group < options_.tenants.size()) {
    spec.headers.emplace_back(options_.tenant_header, fmt::format("tenant-{}", *rec.group + 1));
  }
}

asio::awaitable<void> Runner::turn(Level& level, std::size_t slot) {
  ++level.active;
  const workload::Conversation& conversation = level.loop->conversation(slot);
  workload::HttpRequestSpec spec = api_ == protocol::ApiKind::anthropic_messages
                                       ? workload::render_anthropic(workload_, conversation, options_.model)
                                       : workload::render_openai(workload_, conversation, options_.model);
  report::RequestRecord rec;
  rec.turn = conversation.turn;
  rec.session_index = conversation.session_index;
  rec.task_start = workload_.agentic() && workload::is_task_start(conversation);
  mark_group(level, slot, spec, rec);
  rec.started_at = now();
  const std::size_t target = target_for(conversation.session_index, conversation.turn, targets_.size());
  if (targets_.size() > 1) {
    rec.target = target;
  }
  ++level.sent[target];
  StreamReader reader(api_);
  // Named, not a temporary: GCC 12 destroys temporaries of a co_await expression twice.
  Exchanged x = co_await exchange(target, spec, reader, rec);
  const bool ok = x.ok;
  const bool cancelled = x.cancelled;
  const std::string& problem = x.problem;
  const double end = now();
  rec.ended_at = end;
  rec.ok = ok;
  rec.output_tokens = ok ? reader.output_tokens() : 0;
  if (const auto usage = reader.usage();
      ok && usage && usage->cached_tokens && x.expected_cached && x.expected_block > 0) {
    const auto reported = static_cast<std::int64_t>(*usage->cached_tokens);
    const auto expected = static_cast<std::int64_t>(*x.expected_cached);
    rec.expected_cached_ok = std::abs(expected - reported) <= static_cast<std::int64_t>(x.expected_block);
  }
  if (!ok) {
    rec.ttfb.reset();
  }
  // The loop says what the reply ended (a session, a task); it may replace the conversation, so what the
  // log needs is read first.
  const std::uint64_t session_index = conversation.session_index;
  const workload::TurnEnd turn_end = ok ? level.loop->complete(slot, end, reader.reply())
                                        : level.loop->fail(slot, end, options_.retry_delay);
  rec.session_finished = ok && turn_end.session_finished;
  if (ok && turn_end.task_finished) {
    rec.task_started_at = turn_end.task_started_at;
  }
  // A turn cut short by Ctrl-C says nothing about the server; one cut by the drain timeout does.
  if (!(cancelled && interrupted_)) {
    level.recorder.record(rec);
    if (!ok && level.errors_logged < kLoggedErrorsPerLevel) {
      ++level.errors_logged;
      fmt::print(log_, "{}request failed (session {}, turn {}): {}\n", tty_ ? "\r\x1b[K" : "", session_index,
                 rec.turn, problem);
    }
  }
  --level.active;
  level.wake.cancel();
}

asio::awaitable<void> Runner::drive(Level& level, double end) {
  const auto ex = co_await asio::this_coro::executor;
  while (!interrupted_) {
    const double t = now();
    if (t >= end) {
      break;
    }
    for (std::size_t slot : level.loop->take_ready(t)) {
      asio::co_spawn(ex, turn(level, slot),
                     asio::bind_cancellation_slot(level.cancel[slot]->slot(), asio::detached));
    }
    const double next = std::min(end, level.loop->next_ready_at().value_or(end));
    co_await sleep_model(level.wake, next - now());
  }
}

asio::awaitable<void> Runner::drain(Level& level) {
  const double deadline = now() + options_.drain_timeout;
  while (level.active > 0 && !interrupted_ && now() < deadline) {
    co_await sleep_model(level.wake, deadline - now());
  }
  if (level.active > 0) {
    for (std::size_t slot = 0; slot < level.cancel.size(); ++slot) {
      if (level.loop->in_flight(slot)) {
        level.cancel[slot]->emit(asio::cancellation_type::terminal);
      }
    }
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (level.active > 0) {
      t.expires_after(std::chrono::milliseconds(10));  // cancelled turns unwind within a few loop turns
      co_await t.async_wait(use_tuple);
    }
  }
}

asio::awaitable<void> Runner::sample(Level& level) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  double next = now();
  while (true) {
    if (auto s = co_await scrape(); s && s->ranks > 0) {
      level.recorder.add_busy_sample(s->busy_ranks);
    }
    next += options_.sample_interval;
    co_await sleep_model(t, next - now());
  }
}

void Runner::print_progress(const Level& level, double end, bool final_line) {
  const report::Progress p = level.recorder.progress();
  const double elapsed = std::min(now(), end) - level.recorder.begin_time();
  const std::string line = fmt::format(
      "[{} {:>3} sessions] {:6.1f}/{:.0f} s  finished {:>4}  in flight {:>3}  requests {:>5}  TTFB p50 {}  "
      "errors {}",
      level.policy, level.loop->sessions(), elapsed, options_.duration, p.sessions_finished,
      level.loop->in_flight_count(), p.requests, p.ttfb_p50 ? fmt::format("{:.2f} s", *p.ttfb_p50) : "n/a",
      p.errors);
  if (tty_) {
    fmt::print(log_, "\r\x1b[K{}{}", line, final_line ? "\n" : "");
  } else {
    fmt::print(log_, "{}\n", line);
  }
  std::fflush(log_);
}

asio::awaitable<void> Runner::progress(Level& level, double end) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  // A live line on a terminal; a log line every 10 s (wall) otherwise.
  const auto period =
      tty_ ? std::chrono::milliseconds(500)
           : std::chrono::milliseconds(std::max<long>(50, std::lround(options_.log_interval * 1000)));
  while (true) {
    t.expires_after(period);
    co_await t.async_wait(asio::use_awaitable);
    print_progress(level, end, false);
  }
}

asio::awaitable<std::uint64_t> Runner::run_level(const std::string& policy, int sessions,
                                                 std::uint64_t first_index) {
  const auto ex = co_await asio::this_coro::executor;
  const std::optional<MetricsSample> before = co_await scrape();
  Level level(workload_, policy, sessions, now(), first_index, stayed_by_for(options_), targets_.size(), ex);
  assign_groups(level, static_cast<std::size_t>(sessions));
  current_ = &level;
  const double begin = now();
  level.recorder.begin(begin);
  if (before && before->prefix) {
    level.recorder.set_prefix_start(*before->prefix);
  }
  const double end = begin + options_.duration;
  co_await (drive(level, end) || sample(level) || progress(level, end));
  const double window_end = std::min(now(), end);
  level.loop->stop();
  level.recorder.end(window_end);
  if (const std::optional<MetricsSample> after = co_await scrape(); after && after->prefix) {
    level.recorder.set_prefix_end(*after->prefix);
  }
  print_progress(level, end, true);
  if (targets_.size() > 1) {
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < targets_.size(); ++i) {
      parts.push_back(fmt::format("{} {}", options_.urls[i], level.sent[i]));
    }
    fmt::print(log_, "requests sent per target: {}\n", fmt::join(parts, ", "));
  }
  co_await drain(level);
  current_ = nullptr;
  outcome_.rows.push_back(level.recorder.row());
  if (!level.groups.empty()) {
    const auto rows = report::group_rows(level.recorder.records(), level.groups, begin, window_end);
    report::append_group_grid(outcome_.groups, policy, sessions, rows);
    for (const report::GroupRow& row : rows) {
      outcome_.groups_json.push_back(report::group_json(policy, sessions, row));
    }
  }
  if (options_.records) {
    std::ofstream f(*options_.records, std::ios::app);
    f << report::records_jsonl(level.policy, sessions, level.recorder.records());
  }
  co_return level.loop->next_session_index();
}

bool Runner::resolve_targets() {
  for (const std::string& url : options_.urls) {
    auto target = net::parse_http_url(url);
    if (!target) {
      fail(fmt::format("--url '{}' is not an http://host:port URL", url));
      return false;
    }
    targets_.push_back(*target);
  }
  for (const std::string& url : metrics_urls(options_)) {
    auto ep = net::parse_http_url(url);
    if (!ep) {
      fail(fmt::format("--metrics '{}' is not an http://host:port/path URL", url));
      return false;
    }
    const std::size_t scheme_end = url.find("://");
    const std::size_t path_start = url.find('/', scheme_end + 3);
    metrics_.emplace_back(*ep, path_start == std::string::npos ? "/metrics" : url.substr(path_start));
  }
  return true;
}

// What is measured where: the targets and how turns are spread, the metrics summed, the stayed measure.
void Runner::print_setup() {
  fmt::print(log_, "bench: levels {} sessions, {:.0f} model-s each, time scale {}, {} API at {}{}\n",
             fmt::join(options_.levels, ","), options_.duration, options_.time_scale,
             options_.api == Api::anthropic ? "anthropic" : "openai", fmt::join(options_.urls, ", "),
             options_.compare.empty() ? std::string()
                                      : fmt::format(", affinity {}", fmt::join(options_.compare, " then ")));
  if (targets_.size() > 1) {
    fmt::print(log_,
               "bench: {} targets, each session's turns rotate over them (turn t of session s to target "
               "(s + t) mod {})\n",
               targets_.size(), targets_.size());
  }
  fmt::print(log_, "bench: replicas busy and prefix hits summed over {} /metrics endpoint{}: {}\n",
             metrics_.size(), metrics_.size() == 1 ? "" : "s", fmt::join(metrics_urls(options_), ", "));
  fmt::print(log_, "bench: stayed on replica by {}\n",
             stayed_by_for(options_) == StayedBy::route
                 ? "route (the warden's x-warden-route is sticky)"
                 : "replica (x-warden-replica equals the session's previous turn's)");
}

asio::awaitable<void> Runner::main() {
  if (!resolve_targets()) {
    co_return;
  }
  print_setup();
  const std::vector<std::string> passes =
      options_.compare.empty() ? std::vector<std::string>{options_.label} : options_.compare;
  for (const std::string& pass : passes) {
    if (!options_.compare.empty()) {
      for (const std::string& warden : options_.wardens) {
        if (!co_await set_affinity(warden, pass == "on")) {
          co_return;
        }
      }
    }
    // Every pass replays the same sessions (same seed, same session indices), as the reference did.
    std::uint64_t next_index = 0;
    for (int sessions : options_.levels) {
      if (interrupted_) {
        co_return;
      }
      next_index = co_await run_level(pass, sessions, next_index);
    }
  }
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The baseline's rows and this run's side by side, labelled by their policy labels (or by their URLs when
// the labels are the same).
void print_beside_baseline(const report::Report& baseline, const std::vector<report::Row>& rows,
                           const BenchOptions& o) {
  std::string before = baseline.rows.empty() ? std::string("baseline") : baseline.rows.front().policy;
  std::string now = o.label;
  if (before == now) {
    before = "baseline";
    now = "this run";
  }
  fmt::print("\n{} ({}) beside {} ({}):\n{}", now, fmt::join(o.urls, ", "), before, *o.baseline,
             report::side_by_side_markdown(baseline.rows, rows, before, now));
}

bool write_file(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << content;
  return static_cast<bool>(f);
}

}  // namespace

boost::json::object report_meta(const BenchOptions& o, bool interrupted) {
  boost::json::object meta;
  meta["tool"] = "lm-warden bench";
  meta["version"] = o.version;
  meta["finished_at"] = utc_now();
  meta["url"] = o.urls.empty() ? boost::json::value(nullptr) : boost::json::value(o.urls.front());
  meta["urls"] = boost::json::value_from(o.urls);
  meta["model"] = o.model;
  meta["api"] = o.api == Api::anthropic ? "anthropic" : "openai";
  meta["levels"] = boost::json::value_from(o.levels);
  meta["duration_s"] = o.duration;
  meta["time_scale"] = o.time_scale;
  meta["warden"] = o.wardens.empty() ? boost::json::value(nullptr) : boost::json::value(o.wardens.front());
  meta["wardens"] = boost::json::value_from(o.wardens);
  meta["metrics"] = boost::json::value_from(metrics_urls(o));
  meta["compare"] = boost::json::value_from(o.compare);
  meta["stayed_on_replica_by"] = stayed_by_name(stayed_by_for(o));
  meta["baseline"] = o.baseline ? boost::json::value(*o.baseline) : boost::json::value(nullptr);
  meta["interrupted"] = interrupted;
  boost::json::object w;
  w["preset"] = o.workload.agentic.enabled ? "agentic" : "claude-code";
  w["system_tokens"] = o.workload.system_tokens;
  w["first_tokens"] = o.workload.first_tokens;
  w["turn_tokens"] = o.workload.turn_tokens;
  w["turns"] = o.workload.turns;
  w["max_output"] = o.workload.max_output;
  w["think_time_s"] = o.workload.think_time;
  w["stagger_s"] = o.workload.stagger;
  w["seed"] = o.workload.seed;
  meta["workload"] = std::move(w);
  return meta;
}

BenchOutcome run_bench(const BenchOptions& options, std::FILE* log) {
  if (options.records) {
    std::ofstream truncate(*options.records, std::ios::trunc);  // each level appends its records
  }
  asio::io_context ioc(1);
  Runner runner(ioc, options, log);
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  int signal_count = 0;
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int) {
        if (ec) {
          return;
        }
        if (++signal_count > 1) {
          std::_Exit(130);  // a second Ctrl-C: the user does not want to wait for the summary
        }
        fmt::print(log,
                   "\ninterrupted: stopping, printing what was measured so far (Ctrl-C again to quit now)\n");
        runner.interrupt();
        signals.async_wait(on_signal);
      };
  signals.async_wait(on_signal);
  asio::co_spawn(ioc, runner.main(), [&](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        runner.outcome().failed = true;
        runner.outcome().error = ex.what();
      }
    }
    signals.cancel();
    ioc.stop();
  });
  ioc.run();
  return std::move(runner.outcome());
}

int run_bench_command(const BenchOptions& options) {
  if (auto v = validate(options); !v) {
    fmt::print(stderr, "lm-warden bench: {}\n", v.error());
    return 2;
  }
  // Read before the run: a wrong path should not cost the minutes of a run.
  std::optional<report::Report> baseline;
  if (options.baseline) {
    auto parsed = report::parse_json(read_file(*options.baseline));
    if (!parsed) {
      fmt::print(stderr, "lm-warden bench: --baseline {}: {}\n", *options.baseline, parsed.error());
      return 2;
    }
    baseline = std::move(*parsed);
  }
  BenchOutcome outcome = run_bench(options, stderr);
  if (outcome.failed && outcome.rows.empty()) {
    fmt::print(stderr, "lm-warden bench: {}\n", outcome.error);
    return 1;
  }
  const std::string table =
      options.compare.size() == 2
          ? report::comparison_terminal(outcome.rows, options.compare[0], options.compare[1])
          : report::to_terminal(outcome.rows);
  fmt::print("{}", table);
  if (outcome.groups.size() > 1) {
    fmt::print(
        "\nBy class of work and tenant (task starts sent in the window: their wait held at the warden, "
        "their TTFB):\n\n{}",
        report::grid_terminal(outcome.groups));
  }
  if (baseline) {
    print_beside_baseline(*baseline, outcome.rows, options);
  }
  std::fflush(stdout);
  int code = outcome.failed ? 1 : 0;
  if (outcome.failed) {
    fmt::print(stderr, "lm-warden bench: {}\n", outcome.error);
  }
  if (options.out) {
    report::Report r{outcome.rows, report_meta(options, outcome.interrupted)};
    if (!outcome.groups_json.empty()) {
      r.meta["groups"] = outcome.groups_json;
    }
    const std::optional<std::string> text = report::render_for_path(*options.out, r);
    if (!text || !write_file(*options.out, *text)) {
      fmt::print(stderr, "lm-warden bench: cannot write {}\n", *options.out);
      code = 1;
    } else {
      fmt::print(stderr, "wrote {}\n", *options.out);
    }
  }
  if (options.svg) {
    report::SvgOptions so;
    so.title = options.compare.size() == 2
                   ? fmt::format("TTFB per level, affinity {} vs {} ({})", options.compare[0],
                                 options.compare[1], options.model)
                   : fmt::format("TTFB per level ({})", options.model);
    if (!write_file(*options.svg, report::ttfb_svg(outcome.rows, so))) {
      fmt::print(stderr, "lm-warden bench: cannot write {}\n", *options.svg);
      code = 1;
    } else {
      fmt::print(stderr, "wrote {}\n", *options.svg);
    }
  }
  return outcome.interrupted ? 130 : code;
}

}  // namespace warden::bench
