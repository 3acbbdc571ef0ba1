#include "sim/sim.hpp"

#include <sys/prctl.h>

#include <spdlog/spdlog.h>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/result.hpp"
#include "base/splitmix.hpp"
#include "core/vllm_balancer.hpp"
#include "engine/chat_template.hpp"
#include "engine/engine.hpp"
#include "engine/kv_wire.hpp"
#include "engine/tokenizer.hpp"
#include "engine/tool_calls.hpp"
#include "net/notifier.hpp"
#include "net/tls.hpp"
#include "protocol/error_body.hpp"
#include "sim/cache_info.hpp"
#include "sim/formats.hpp"
#include "sim/kv_publisher.hpp"
#include "sim/length_fields.hpp"

namespace warden::sim {

namespace asio = boost::asio;
namespace json = boost::json;
using net::http::field;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// An error the handler answers with: HTTP status + message, in the endpoint's own format.
struct HttpError {
  unsigned status = 400;
  std::string message;
  std::string param;
};

std::string openai_error_body(const HttpError& e) {
  // vLLM's ErrorResponse: {"error": {"message", "type", "param", "code"}} with type BadRequestError, ...
  const int status = static_cast<int>(e.status);
  return protocol::openai_error_body({.message = e.message,
                                      .type = protocol::vllm_error_type(status),
                                      .param = e.param,
                                      .status_code = status});
}

struct Parsed {
  Api api = Api::chat;
  bool count_tokens = false;
  engine::Tokens prompt;
  int max_tokens = 16;
  LengthFields length;        // ignore_eos, min_tokens
  std::int64_t priority = 0;  // vLLM's request priority (lower first), OpenAI-style APIs only
  bool stream = false;
  bool include_usage = false;
  engine::ToolReply tools;  // the reply's tool calls, when the engine answers with some
  std::string session_id;   // body `session_id`, else header X-Session-ID (vLLM: the body's wins)
};

std::optional<Api> api_for(std::string_view path, bool& count_tokens) {
  count_tokens = false;
  if (path == "/v1/chat/completions") {
    return Api::chat;
  }
  if (path == "/v1/completions") {
    return Api::completions;
  }
  if (path == "/v1/responses") {
    return Api::responses;
  }
  if (path == "/v1/messages") {
    return Api::messages;
  }
  if (path == "/v1/messages/count_tokens") {
    count_tokens = true;
    return Api::messages;
  }
  return std::nullopt;
}

engine::ApiKind engine_kind(Api api) {
  switch (api) {
    case Api::chat:
      return engine::ApiKind::chat_completions;
    case Api::completions:
      return engine::ApiKind::completions;
    case Api::responses:
      return engine::ApiKind::responses;
    case Api::messages:
      return engine::ApiKind::anthropic_messages;
  }
  return engine::ApiKind::chat_completions;
}

// An optional positive integer member: nullopt if absent or null; error if not a positive integer.
base::Result<std::optional<int>, HttpError> positive_int(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || it->value().is_null()) {
    return std::optional<int>{};
  }
  const json::value& v = it->value();
  std::int64_t n = 0;
  if (v.is_int64()) {
    n = v.get_int64();
  } else if (v.is_uint64()) {
    n = v.get_uint64() > 1'000'000'000ull ? 1'000'000'000 : static_cast<std::int64_t>(v.get_uint64());
  } else if (v.is_double() && std::floor(v.get_double()) == v.get_double() &&
             std::abs(v.get_double()) < 1e9) {
    n = static_cast<std::int64_t>(v.get_double());
  } else {
    return HttpError{400, fmt::format("'{}' must be an integer", key), std::string(key)};
  }
  if (n < 1) {
    return HttpError{400, fmt::format("'{}' must be at least 1, got {}.", key, n), std::string(key)};
  }
  return std::optional<int>{static_cast<int>(std::min<std::int64_t>(n, 1'000'000'000))};
}

// vLLM's `priority` (OpenAI-style APIs; its Anthropic endpoint has no such field and drops it): an integer,
// and one other than 0 only when the engine schedules by priority, as vLLM refuses it otherwise.
std::optional<HttpError> parse_priority(Api api, const json::object& o, engine::SchedulingPolicy policy,
                                        Parsed& p) {
  const auto it = o.find("priority");
  if (api == Api::messages || it == o.end() || it->value().is_null()) {
    return std::nullopt;
  }
  const json::value& v = it->value();
  if (v.is_int64()) {
    p.priority = v.get_int64();
  } else if (v.is_double() && std::floor(v.get_double()) == v.get_double() &&
             std::abs(v.get_double()) < 9e18) {
    p.priority = static_cast<std::int64_t>(v.get_double());
  } else {
    return HttpError{400, "'priority' must be an integer", "priority"};
  }
  if (p.priority != 0 && policy != engine::SchedulingPolicy::priority) {
    return HttpError{400, fmt::format("Got priority {} but Priority scheduling is not enabled.", p.priority),
                     "priority"};
  }
  return std::nullopt;
}

// `stream` and `stream_options.include_usage`.
std::optional<HttpError> parse_stream(const json::object& o, Parsed& p) {
  auto sit = o.find("stream");
  if (sit != o.end() && !sit->value().is_null()) {
    if (!sit->value().is_bool()) {
      return HttpError{400, "'stream' must be a boolean", "stream"};
    }
    p.stream = sit->value().get_bool();
  }
  if (auto so = o.find("stream_options"); so != o.end() && so->value().is_object()) {
    if (auto iu = so->value().get_object().find("include_usage"); iu != so->value().get_object().end()) {
      p.include_usage = iu->value().is_bool() && iu->value().get_bool();
    }
  }
  return std::nullopt;
}

// The API's own output-limit field, if present: {value, key}. Chat prefers max_completion_tokens.
base::Result<std::optional<std::pair<int, std::string_view>>, HttpError> requested_output(
    Api api, const json::object& o) {
  std::vector<std::string_view> keys;
  switch (api) {
    case Api::chat:
      keys = {"max_completion_tokens", "max_tokens"};
      break;
    case Api::completions:
    case Api::messages:
      keys = {"max_tokens"};
      break;
    case Api::responses:
      keys = {"max_output_tokens"};
      break;
  }
  for (std::string_view key : keys) {
    auto v = positive_int(o, key);
    if (!v) {
      return v.error();
    }
    if (*v) {
      return std::optional<std::pair<int, std::string_view>>{std::pair{**v, key}};
    }
  }
  if (api == Api::messages) {
    return HttpError{400, "Field required: max_tokens", "max_tokens"};
  }
  return std::optional<std::pair<int, std::string_view>>{};
}

// Prometheus families with one sample per rank, labelled as vLLM labels them (engine, model_name).
class RankFamilies {
 public:
  // quoted_model: the model name as a JSON string (Prometheus escapes are a subset); created: the
  // counters' _created value (Unix seconds).
  RankFamilies(std::string& out, std::size_t ranks, std::string quoted_model, double created)
      : out_(out), ranks_(ranks), model_(std::move(quoted_model)), created_(created) {}

  std::string& out() { return out_; }
  std::string labels(std::size_t r) const { return fmt::format("engine=\"{}\",model_name={}", r, model_); }

  // HELP, TYPE and value(rank) for every rank.
  template <class F>
  void family(std::string_view name, std::string_view type, std::string_view help, F value) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (std::size_t r = 0; r < ranks_; ++r) {
      out_ += fmt::format("{}{{{}}} {}\n", name, labels(r), static_cast<double>(value(r)));
    }
  }
  // base_total, then base_created as vLLM writes it beside every counter.
  template <class F>
  void counter(std::string_view base, std::string_view help, F value) {
    family(fmt::format("{}_total", base), "counter", help, value);
    family(fmt::format("{}_created", base), "gauge", help, [&](std::size_t) { return created_; });
  }
  double created() const { return created_; }

 private:
  std::string& out_;
  std::size_t ranks_;
  std::string model_;
  double created_;
};

// vLLM's scheduler, KV cache and token families.
void engine_families(RankFamilies& f, const std::vector<engine::Metrics>& ms) {
  f.family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
           [&](std::size_t r) { return ms[r].num_running; });
  f.family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           [&](std::size_t r) { return ms[r].num_waiting; });
  f.family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
           [&](std::size_t r) { return ms[r].kv_cache_usage; });
  f.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
            [&](std::size_t r) { return ms[r].prefix_cache_queries_total; });
  f.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
            [&](std::size_t r) { return ms[r].prefix_cache_hits_total; });
  f.counter("vllm:prompt_tokens", "Number of prefill tokens processed.",
            [&](std::size_t r) { return ms[r].prompt_tokens_total; });
  f.counter("vllm:generation_tokens", "Number of generation tokens processed.",
            [&](std::size_t r) { return ms[r].generation_tokens_total; });
  f.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.",
            [&](std::size_t r) { return ms[r].num_preemptions_total; });
  f.counter(
      "vllm:external_prefix_cache_queries",
      "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of "
      "queried tokens.",
      [&](std::size_t r) { return ms[r].external_prefix_cache_queries_total; });
  f.counter(
      "vllm:external_prefix_cache_hits",
      "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of "
      "cached tokens.",
      [&](std::size_t r) { return ms[r].external_prefix_cache_hits_total; });
}

// Histogram of time to first token (model seconds), then its _created gauge.
void ttft_histogram(RankFamilies& f, const std::vector<engine::Metrics>& ms) {
  std::string& out = f.out();
  out += "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n";
  out += "# TYPE vllm:time_to_first_token_seconds histogram\n";
  for (std::size_t r = 0; r < ms.size(); ++r) {
    const auto& h = ms[r].time_to_first_token;
    const std::string labels = f.labels(r);
    for (std::size_t b = 0; b < h.bounds.size() && b < h.buckets.size(); ++b) {
      out += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"{}\"}} {}\n", labels, h.bounds[b],
                         static_cast<double>(h.buckets[b]));
    }
    out += fmt::format("vllm:time_to_first_token_seconds_bucket{{{},le=\"+Inf\"}} {}\n", labels,
                       static_cast<double>(h.count));
    out += fmt::format("vllm:time_to_first_token_seconds_count{{{}}} {}\n", labels,
                       static_cast<double>(h.count));
    out += fmt::format("vllm:time_to_first_token_seconds_sum{{{}}} {}\n", labels, h.sum);
  }
  f.family("vllm:time_to_first_token_seconds_created", "gauge",
           "Histogram of time to first token in seconds.", [&](std::size_t) { return f.created(); });
}

}  // namespace

// ------------------------------------------------------------------------------------------------------

struct Job;

struct Rank {
  Rank(int i, const engine::EngineConfig& c, std::uint64_t seed, asio::any_io_executor ex)
      : index(i), engine(c, seed), wake(ex), timer(ex) {}
  int index;
  engine::Engine engine;
  net::Notifier wake;
  asio::steady_timer timer;
  std::unordered_map<engine::RequestId, Job*> jobs;
  double clock = 0;     // model time at the end of the last step
  bool busy = false;    // stepping back to back (not waiting for work)
  double step_end = 0;  // end of the step in progress
  std::uint64_t steps = 0;
  double lag = 0;  // model seconds the last step's delivery was behind the scaled wall clock
  double max_lag = 0;
  double lag_sum = 0;
};

// One request in flight: events from the stepper, consumed by the handler or stream body.
struct Job {
  Job(Rank& r, engine::RequestId i, asio::any_io_executor ex) : rank(r), id(i), notify(ex) {}
  ~Job() {
    rank.jobs.erase(id);
    if (balancer != nullptr) {
      balancer->finish(api_server, static_cast<core::ReplicaIndex>(rank.index));  // finished or gone
    }
    if (!finished) {
      rank.engine.abort(id);  // client gone (or shutdown): free the slot and blocks now
      rank.wake.notify();
    }
  }
  Rank& rank;
  engine::RequestId id;
  net::Notifier notify;
  std::deque<engine::Event> events;
  bool finished = false;
  UsageOut usage;  // prompt/cached estimate until the final event carries the engine's figures
  core::VllmBalancer* balancer = nullptr;  // set when vLLM's balancer chose the rank (not pinned)
  std::uint32_t api_server = 0;            // ... through this API server
  void take(const engine::Event& ev);
};

// Where a request goes: its rank and, unless pinned, the API server whose balancer picked it.
struct RankChoice {
  int rank = 0;
  std::optional<std::uint32_t> api_server;
};

struct Sim::Impl {
  Impl(asio::io_context& io, SimOptions o) : ioc(io), opts(std::move(o)) {
    int n = std::max(1, opts.data_parallel_size);
    opts.data_parallel_size = n;
    if (opts.api_server_count <= 0) {
      opts.api_server_count = n;
    }
    opts.engine.kv_events = opts.kv_events.publishes();
    for (int i = 0; i < n; ++i) {
      ranks.push_back(std::make_unique<Rank>(i, opts.engine, opts.seed, ioc.get_executor()));
    }
    balancer.emplace(static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(opts.api_server_count),
                     opts.vllm_balancer);
    wall_start = Clock::now();
    unix_start = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }

  asio::io_context& ioc;
  SimOptions opts;
  std::vector<std::unique_ptr<Rank>> ranks;
  std::optional<core::VllmBalancer> balancer;  // vLLM's balancer: one stale view per API server
  long long balancer_epoch = -1;               // refresh period of the last publish
  Clock::time_point wall_start;
  double unix_start = 0;
  engine::RequestId next_id = 1;
  std::uint64_t id_counter = 0;
  bool stopping = false;
  std::unique_ptr<KvPublishers> kv;  // with --kv-events-config: one ZMQ publisher per rank

  double model_now() const {
    return std::chrono::duration<double>(Clock::now() - wall_start).count() * opts.time_scale;
  }
  Clock::time_point wall_at(double model_t) const {
    return wall_start + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(model_t / opts.time_scale));
  }

  asio::awaitable<void> stepper(Rank& r);
  void deliver(Rank& r, std::vector<engine::Event>& events);
  asio::awaitable<net::Reply> handle(net::Request& req, const net::ConnectionInfo& conn);
  struct StateRoute {
    std::string_view path;
    net::Response (Impl::*serve)(const net::Request&) const;
  };
  static const StateRoute* state_route(std::string_view path);
  net::Response serve_empty(const net::Request& req) const;
  net::Response serve_metrics(const net::Request& req) const;
  net::Response serve_models(const net::Request& req) const;
  net::Response serve_kv_event_sources(const net::Request& req) const;
  void publish_kv_events(const Rank& r, const engine::StepResult& res);
  static net::Response error_reply(const net::Request& req, Api api, const HttpError& e);
  // A generation request: a rank, the job on it, then the reply whole or as a stream.
  asio::awaitable<net::Reply> generate(net::Request& req, const net::ConnectionInfo& conn, Parsed p);
  base::Result<std::shared_ptr<Job>, HttpError> submit(Rank& r, Parsed& p, asio::any_io_executor executor);
  ReplyMeta reply_meta(const Parsed& p);
  static asio::awaitable<net::Reply> reply_whole(const net::Request& req, Api api, Job& job,
                                                 const ReplyMeta& meta, engine::ToolReply tools);
  static net::StreamReply reply_stream(const net::Request& req, Api api, std::shared_ptr<Job> job,
                                       const ReplyMeta& meta, engine::ToolReply tools);
  base::Result<Parsed, HttpError> parse(Api api, bool count_tokens, std::string_view body) const;
  std::optional<HttpError> check_model(Api api, const json::object& o) const;
  base::Result<int, HttpError> output_limit(Api api, const json::object& o, std::int64_t prompt_len) const;
  base::Result<RankChoice, HttpError> choose_rank(const net::Request& req, const net::ConnectionInfo& conn);
  std::string metrics_text() const;
  void health_families(RankFamilies& families) const;
  std::string models_body() const;
};

asio::awaitable<void> Sim::Impl::stepper(Rank& r) {
  while (!stopping) {
    if (!r.engine.has_work()) {
      r.busy = false;
      co_await r.wake.wait();
      continue;
    }
    double now = model_now();
    // Back to back while busy (even when lagging: model time must stay continuous); from now when idle.
    double start = r.busy ? r.clock : std::max(r.clock, now);
    r.busy = true;
    engine::StepResult res = r.engine.step(start);
    if (res.duration <= 0) {
      r.busy = false;
      co_await r.wake.wait();  // nothing schedulable: wait for an arrival or an abort
      continue;
    }
    double end = start + res.duration;
    r.step_end = end;
    ++r.steps;
    auto target = wall_at(end);
    if (target > Clock::now()) {
      r.timer.expires_at(target);
      co_await r.timer.async_wait(use_tuple);
    } else {
      co_await asio::post(ioc, asio::use_awaitable);  // behind: still let I/O run between steps
    }
    r.lag = std::max(0.0, model_now() - end);
    r.max_lag = std::max(r.max_lag, r.lag);
    r.lag_sum += r.lag;
    r.clock = end;
    deliver(r, res.events);
    publish_kv_events(r, res);
  }
}

// One batch per step with events, stamped with the wall clock as vLLM's scheduler stamps it.
void Sim::Impl::publish_kv_events(const Rank& r, const engine::StepResult& res) {
  if (kv == nullptr || res.kv_events.empty()) {
    return;
  }
  const double ts =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  kv->publish(r.index, engine::to_wire(res.kv_events, ts));
}

void Sim::Impl::deliver(Rank& r, std::vector<engine::Event>& events) {
  for (auto& ev : events) {
    if (ev.kind != engine::Event::Kind::token) {
      continue;
    }
    auto it = r.jobs.find(ev.request);
    if (it == r.jobs.end()) {
      continue;
    }
    it->second->events.push_back(ev);
    it->second->notify.notify();
  }
}

base::Result<RankChoice, HttpError> Sim::Impl::choose_rank(const net::Request& req,
                                                           const net::ConnectionInfo& conn) {
  int n = opts.data_parallel_size;
  auto it = req.find("X-data-parallel-rank");
  if (it != req.end()) {
    std::string_view v = it->value();
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) {
      v.remove_prefix(1);
    }
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) {
      v.remove_suffix(1);
    }
    if (v.size() > 1 && v.front() == '+') {
      v.remove_prefix(1);  // Python's int() accepts "+1"
    }
    long long r = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), r);
    if (ec == std::errc{} && ptr == v.data() + v.size() && !v.empty()) {
      if (r < 0 || r >= n) {
        return HttpError{400, fmt::format("data_parallel_rank {} is out of range [0, {}).", r, n), ""};
      }
      return RankChoice{static_cast<int>(r), std::nullopt};
    }
    // Not an integer: ignored, like vLLM.
  }
  // The DP coordinator publishes every rank's counts about every lb_refresh_interval of model time; in
  // between, each API server decides on its stale copy. Published on the first pick of a new period.
  const double now = model_now();
  const long long epoch = opts.lb_refresh_interval > 0
                              ? static_cast<long long>(std::floor(now / opts.lb_refresh_interval))
                              : balancer_epoch + 1;
  if (epoch != balancer_epoch) {
    balancer_epoch = epoch;
    std::vector<core::RankLoad> loads;
    loads.reserve(ranks.size());
    for (const auto& rank : ranks) {
      const engine::Metrics m = rank->engine.metrics();
      loads.push_back(core::RankLoad{m.num_waiting, m.num_running, m.kv_cache_usage});
    }
    balancer->publish(loads);
  }
  // A connection meets one API server (SO_REUSEPORT): chosen per connection, seeded.
  const auto server = static_cast<std::uint32_t>(
      base::splitmix64(opts.seed ^ (conn.id * base::kSplitMixGamma)) % balancer->api_servers());
  return RankChoice{static_cast<int>(balancer->route_via(server)), server};
}

base::Result<Parsed, HttpError> Sim::Impl::parse(Api api, bool count_tokens, std::string_view body) const {
  boost::system::error_code ec;
  json::parse_options po;
  po.max_depth = 64;
  json::value doc = json::parse(body, ec, {}, po);
  if (ec) {
    return HttpError{400, fmt::format("Invalid JSON in request body: {}", ec.message()), ""};
  }
  if (!doc.is_object()) {
    return HttpError{400, "The request body must be a JSON object.", ""};
  }
  const json::object& o = doc.get_object();
  if (auto bad = check_model(api, o)) {
    return *bad;
  }
  Parsed p;
  p.api = api;
  p.count_tokens = count_tokens;
  auto prompt = engine::render_prompt(engine_kind(api), doc);
  if (!prompt) {
    return HttpError{400, prompt.error().message, prompt.error().param};
  }
  p.prompt = std::move(*prompt);
  if (count_tokens) {
    return p;
  }
  p.tools = engine::tool_reply_for(opts.engine.tools, engine_kind(api), doc, opts.seed);
  if (auto bad = parse_stream(o, p)) {
    return *bad;
  }
  if (auto bad = parse_priority(api, o, opts.engine.scheduling_policy, p)) {
    return *bad;
  }
  if (const auto sid = o.find("session_id"); sid != o.end() && sid->value().is_string()) {
    p.session_id = sid->value().get_string();
  }
  auto max_tokens = output_limit(api, o, static_cast<std::int64_t>(p.prompt.size()));
  if (!max_tokens) {
    return max_tokens.error();
  }
  p.max_tokens = *max_tokens;
  auto length = parse_length_fields(o, p.max_tokens);
  if (!length) {
    return HttpError{400, length.error().message, length.error().param};
  }
  p.length = *length;
  if (p.length.ignore_eos || p.length.min_tokens > p.tools.tokens.size()) {
    p.tools = {};  // a reply held past its end is text, not a tool call the client would have to parse
  }
  return p;
}

std::optional<HttpError> Sim::Impl::check_model(Api api, const json::object& o) const {
  auto mit = o.find("model");
  if (mit == o.end() || mit->value().is_null()) {
    if (api == Api::messages) {
      return HttpError{400, "Field required: model", "model"};
    }
    return std::nullopt;  // OpenAI-style endpoints default to the served model, as vLLM does
  }
  if (!mit->value().is_string()) {
    return HttpError{400, "'model' must be a string", "model"};
  }
  if (mit->value().get_string() != opts.served_model_name) {
    return HttpError{
        404, fmt::format("The model `{}` does not exist.", std::string_view(mit->value().get_string())),
        "model"};
  }
  return std::nullopt;
}

base::Result<int, HttpError> Sim::Impl::output_limit(Api api, const json::object& o,
                                                     std::int64_t prompt_len) const {
  const auto max_len = static_cast<std::int64_t>(opts.engine.max_model_len);
  if (prompt_len >= max_len) {
    return HttpError{
        400,
        fmt::format("This model's maximum context length is {} tokens. However, your request has {} "
                    "input tokens. Please reduce the length of the input messages.",
                    max_len, prompt_len),
        "messages"};
  }
  auto requested = requested_output(api, o);
  if (!requested) {
    return requested.error();
  }
  const std::int64_t room = max_len - prompt_len;
  if (*requested) {
    const auto [n, key] = **requested;
    if (n > room) {
      return HttpError{
          400,
          fmt::format("'{}' is too large: {}. This model's maximum context length is {} tokens and your "
                      "request has {} input tokens ({} > {} - {}).",
                      key, n, max_len, prompt_len, n, max_len, prompt_len),
          std::string(key)};
    }
    return base::Result<int, HttpError>(boost::system::in_place_value, n);
  }
  // vLLM's defaults: completions 16 tokens, chat and responses the rest of the context.
  return base::Result<int, HttpError>(
      boost::system::in_place_value,
      api == Api::completions ? static_cast<int>(std::min<std::int64_t>(16, room)) : static_cast<int>(room));
}

// The read-only endpoints, answered from the sim's state (GET or HEAD); nullptr for any other path.
const Sim::Impl::StateRoute* Sim::Impl::state_route(std::string_view path) {
  static constexpr StateRoute kRoutes[] = {
      {"/health", &Impl::serve_empty},
      {"/ping", &Impl::serve_empty},
      {"/metrics", &Impl::serve_metrics},
      {"/v1/models", &Impl::serve_models},
      {"/kv_event_sources", &Impl::serve_kv_event_sources},
  };
  for (const StateRoute& route : kRoutes) {
    if (route.path == path) {
      return &route;
    }
  }
  return nullptr;
}

asio::awaitable<net::Reply> Sim::Impl::handle(net::Request& req, const net::ConnectionInfo& conn) {
  std::string_view target = req.target();
  std::string_view path = target.substr(0, target.find('?'));
  if (path.size() > 1 && path.back() == '/') {
    path.remove_suffix(1);
  }
  if (const StateRoute* route = state_route(path)) {
    const bool is_get = req.method() == net::http::verb::get || req.method() == net::http::verb::head;
    if (!is_get) {
      co_return net::make_response(req, 405, R"({"detail":"Method Not Allowed"})");
    }
    co_return (this->*route->serve)(req);
  }
  bool count_tokens = false;
  const auto api = api_for(path, count_tokens);
  if (!api) {
    co_return net::make_response(req, 404, R"({"detail":"Not Found"})");
  }
  if (req.method() != net::http::verb::post) {
    co_return net::make_response(req, 405, R"({"detail":"Method Not Allowed"})");
  }
  auto parsed = parse(*api, count_tokens, req.body());
  if (!parsed) {
    co_return error_reply(req, *api, parsed.error());
  }
  if (parsed->count_tokens) {
    co_return net::make_response(req, 200,
                                 json::serialize(json::object{{"input_tokens", parsed->prompt.size()}}));
  }
  co_return co_await generate(req, conn, std::move(*parsed));
}

net::Response Sim::Impl::serve_empty(const net::Request& req) const {
  return net::make_response(req, 200, "", "");
}

net::Response Sim::Impl::serve_metrics(const net::Request& req) const {
  return net::make_response(req, 200, metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
}

net::Response Sim::Impl::serve_models(const net::Request& req) const {
  return net::make_response(req, 200, models_body());
}

// vLLM's discovery route: a bare JSON array, one entry per rank whose publisher is on.
net::Response Sim::Impl::serve_kv_event_sources(const net::Request& req) const {
  return net::make_response(req, 200, kv != nullptr ? kv->sources_json() : "[]");
}

net::Response Sim::Impl::error_reply(const net::Request& req, Api api, const HttpError& e) {
  std::string body = api == Api::messages ? protocol::format_error(protocol::ErrorFormat::anthropic,
                                                                   static_cast<int>(e.status), e.message)
                                          : openai_error_body(e);
  return net::make_response(req, e.status, std::move(body));
}

asio::awaitable<net::Reply> Sim::Impl::generate(net::Request& req, const net::ConnectionInfo& conn,
                                                Parsed p) {
  auto rank = choose_rank(req, conn);
  if (!rank) {
    co_return error_reply(req, p.api, rank.error());
  }
  if (const auto sid = req.find("X-Session-ID"); p.session_id.empty() && sid != req.end()) {
    p.session_id = sid->value();
  }
  auto job = submit(*ranks[static_cast<std::size_t>(rank->rank)], p, co_await asio::this_coro::executor);
  if (rank->api_server && job) {
    (*job)->balancer = &*balancer;  // in that server's in-flight count until the job ends
    (*job)->api_server = *rank->api_server;
  } else if (rank->api_server) {
    balancer->finish(*rank->api_server, static_cast<core::ReplicaIndex>(rank->rank));  // refused: never ran
  }
  if (!job) {
    co_return error_reply(req, p.api, job.error());
  }
  const ReplyMeta meta = reply_meta(p);
  if (!p.stream) {
    co_return co_await reply_whole(req, p.api, **job, meta, std::move(p.tools));
  }
  co_return reply_stream(req, p.api, *job, meta, std::move(p.tools));
}

base::Result<std::shared_ptr<Job>, HttpError> Sim::Impl::submit(Rank& r, Parsed& p,
                                                                asio::any_io_executor executor) {
  auto job = std::make_shared<Job>(r, next_id++, executor);
  job->usage.prompt_tokens = static_cast<std::uint32_t>(p.prompt.size());
  job->usage.cached_tokens = static_cast<std::uint32_t>(r.engine.cached_prefix_tokens(p.prompt));
  engine::RequestSpec spec;
  spec.id = job->id;
  spec.prompt = std::move(p.prompt);
  spec.max_tokens = p.max_tokens;
  spec.ignore_eos = p.length.ignore_eos;
  spec.min_tokens = p.length.min_tokens;
  spec.priority = p.priority;
  spec.session_id = std::move(p.session_id);
  if (!p.tools.calls.empty()) {
    spec.reply = p.tools.tokens;  // generated like any reply: same steps, same usage
  }
  const double now = model_now();
  spec.arrival_time = r.busy ? std::min(now, r.step_end) : std::max(now, r.clock);
  auto added = r.engine.add_request(std::move(spec));
  if (!added) {
    job->finished = true;  // never entered the engine: nothing to abort
    return HttpError{400, added.error().message, added.error().param};
  }
  r.jobs[job->id] = job.get();
  r.wake.notify();
  return job;
}

ReplyMeta Sim::Impl::reply_meta(const Parsed& p) {
  ReplyMeta meta;
  ++id_counter;
  meta.id = make_id(p.api, base::splitmix64(opts.seed ^ id_counter), base::splitmix64(id_counter * 31 + 7));
  meta.model = opts.served_model_name;
  meta.created = static_cast<std::int64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  meta.include_usage = p.include_usage;
  return meta;
}

// The engine's figures on the final event; until then the count of tokens seen.
void Job::take(const engine::Event& ev) {
  if (ev.finished) {
    finished = true;
    usage.prompt_tokens = ev.usage.prompt_tokens;
    usage.cached_tokens = ev.usage.cached_tokens;
    usage.completion_tokens = ev.usage.completion_tokens;
    usage.length = ev.usage.finish_reason == engine::FinishReason::length;
  } else {
    usage.completion_tokens = ev.index + 1;
  }
}

asio::awaitable<net::Reply> Sim::Impl::reply_whole(const net::Request& req, Api api, Job& job,
                                                   const ReplyMeta& meta, engine::ToolReply tools) {
  std::string text;
  while (!job.finished) {
    while (job.events.empty()) {
      co_await job.notify.wait();
    }
    while (!job.events.empty()) {
      engine::Event ev = job.events.front();
      job.events.pop_front();
      text += engine::token_text(ev.token);
      job.take(ev);
    }
  }
  co_return net::make_response(req, 200, full_body(api, meta, text, job.usage, tools));
}

net::StreamReply Sim::Impl::reply_stream(const net::Request& req, Api api, std::shared_ptr<Job> job,
                                         const ReplyMeta& meta, engine::ToolReply tools) {
  net::StreamReply reply = net::sse_reply(req);
  auto encoder = std::make_shared<StreamEncoder>(api, meta, std::move(tools));
  reply.body = [job, encoder](net::StreamWriter& w) -> asio::awaitable<void> {
    bool started = false;
    std::string out;
    while (!job->finished) {
      while (job->events.empty()) {
        co_await job->notify.wait();
      }
      out.clear();
      if (!started) {
        out += encoder->start(job->usage);
        started = true;
      }
      while (!job->events.empty()) {
        engine::Event ev = job->events.front();
        job->events.pop_front();
        job->take(ev);
        out += encoder->token(engine::token_text(ev.token), ev.finished, job->usage);
      }
      if (job->finished) {
        out += encoder->finish(job->usage);
      }
      if (co_await w.write(out)) {
        co_return;  // client gone: the Job's destructor aborts the request
      }
    }
  };
  return reply;
}

std::string Sim::Impl::models_body() const {
  json::object model{{"id", opts.served_model_name},
                     {"object", "model"},
                     {"created", static_cast<std::int64_t>(unix_start)},
                     {"owned_by", "vllm"},
                     {"root", opts.served_model_name},
                     {"parent", nullptr},
                     {"max_model_len", opts.engine.max_model_len}};
  return json::serialize(json::object{{"object", "list"}, {"data", json::array{std::move(model)}}});
}

std::string Sim::Impl::metrics_text() const {
  std::vector<engine::Metrics> ms;
  for (const auto& r : ranks) {
    ms.push_back(r->engine.metrics());
  }
  std::string out;
  out.reserve(8192);
  RankFamilies families(out, ms.size(), protocol::json_quote(opts.served_model_name), unix_start);
  engine_families(families, ms);
  ttft_histogram(families, ms);
  out += "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n";
  out += "# TYPE vllm:cache_config_info gauge\n";
  // As in vLLM, the info gauge carries the cache config and the engine, but no model_name.
  for (std::size_t r = 0; r < ms.size(); ++r) {
    out += fmt::format("vllm:cache_config_info{{{}}} 1.0\n",
                       cache_config_labels(opts.engine, static_cast<int>(r)));
  }
  health_families(families);
  return out;
}

// The simulator's own health: how far each rank's clock is behind the scaled wall clock.
void Sim::Impl::health_families(RankFamilies& families) const {
  const double now = model_now();
  families.family("warden_sim_lag_seconds", "gauge",
                  "Model seconds the last step was delivered behind the scaled clock.",
                  [&](std::size_t r) { return ranks[r]->busy ? ranks[r]->lag : 0.0; });
  families.family("warden_sim_max_lag_seconds", "gauge", "Largest lag seen (model seconds).",
                  [&](std::size_t r) { return ranks[r]->max_lag; });
  families.family("warden_sim_behind_seconds", "gauge",
                  "Scaled wall clock minus the rank's model clock while busy.",
                  [&](std::size_t r) { return ranks[r]->busy ? std::max(0.0, now - ranks[r]->clock) : 0.0; });
  families.counter("warden_sim_steps", "Engine steps run.", [&](std::size_t r) { return ranks[r]->steps; });
  families.family("warden_sim_model_time_seconds", "gauge",
                  "Model time since start (wall time x time scale).", [&](std::size_t) { return now; });
}

// ------------------------------------------------------------------------------------------------------

Sim::Sim(asio::io_context& ioc, SimOptions opts) : impl_(std::make_unique<Impl>(ioc, std::move(opts))) {}

Sim::~Sim() = default;

net::Handler Sim::handler() {
  return [impl = impl_.get()](net::Request& req, const net::ConnectionInfo& conn) {
    return impl->handle(req, conn);
  };
}

void Sim::start() {
  for (auto& r : impl_->ranks) {
    asio::co_spawn(impl_->ioc, impl_->stepper(*r), [idx = r->index](std::exception_ptr e) {
      if (!e) {
        return;
      }
      try {
        std::rethrow_exception(e);
      } catch (const boost::system::system_error& ex) {
        if (ex.code() != asio::error::operation_aborted &&
            ex.code() != asio::experimental::error::channel_closed) {
          spdlog::error("rank {} stepper: {}", idx, ex.what());
        }
      } catch (const std::exception& ex) {
        spdlog::error("rank {} stepper: {}", idx, ex.what());
      }
    });
  }
}

base::Result<void> Sim::open_kv_events() {
  if (!impl_->opts.kv_events.publishes()) {
    return {};
  }
  auto kv = KvPublishers::open(impl_->opts.kv_events, impl_->opts.data_parallel_size);
  if (!kv) {
    return base::Result<void>(boost::system::in_place_error, kv.error());
  }
  impl_->kv = std::move(*kv);
  return {};
}

void Sim::stop() {
  impl_->stopping = true;
  if (impl_->kv != nullptr) {
    impl_->kv->stop();
  }
  for (auto& r : impl_->ranks) {
    r->wake.close();
    r->timer.cancel();
  }
}

double Sim::model_now() const {
  return impl_->model_now();
}

std::string Sim::metrics_text() const {
  return impl_->metrics_text();
}

int run_sim(const SimOptions& opts) {
  // Step timers fire on time: Linux lets a normal process's timers slip by up to 50 µs (timer slack) to
  // batch wake-ups, which would add tens of microseconds of jitter to every engine step, and to every
  // latency measured through the sim. A GPU engine's steps are not delayed like that.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  asio::io_context ioc(1);
  Sim sim(ioc, opts);
  net::ServerOptions so;
  so.host = opts.host;
  so.port = opts.port;
  so.max_body_bytes = opts.max_body_bytes;
  so.make_too_large = [](const net::http::request_header<>& request, std::size_t limit, bool) {
    net::Response res{net::http::status::payload_too_large, request.version()};
    res.set(field::content_type, "application/json");
    res.body() = openai_error_body(
        HttpError{413, fmt::format("Request body exceeds the limit of {} bytes.", limit), ""});
    res.prepare_payload();
    return res;
  };
  net::Server server(ioc, so, sim.handler());
  if (!opts.ssl_certfile.empty() || !opts.ssl_keyfile.empty()) {
    auto tls = net::make_server_tls({opts.ssl_certfile, opts.ssl_keyfile});
    if (!tls) {
      spdlog::error("sim: --ssl-certfile/--ssl-keyfile: {}", tls.error());
      return 2;
    }
    server.set_tls(std::move(*tls));
  }
  if (auto kv = sim.open_kv_events(); !kv) {
    spdlog::error("sim: --kv-events-config: {}", kv.error());
    return 2;
  }
  sim.start();
  spdlog::info("sim: {} rank(s), preset {}, time scale {}, model {}", opts.data_parallel_size,
               opts.engine.preset, opts.time_scale, opts.served_model_name);
  return net::run_until_signal(ioc, server, [&] { sim.stop(); });
}

}  // namespace warden::sim
