#include "gateway/gateway.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <random>

#include "gateway/config/origin_guard.hpp"
#include "gateway/launched_kv_events.hpp"
#include "gateway/proxy/http_util.hpp"
#include "gateway/runtime/working_set.hpp"
#include "protocol/api.hpp"
#include "protocol/error_body.hpp"

namespace warden::gateway {

namespace asio = net::asio;
namespace http = net::http;
using namespace std::chrono_literals;

namespace {

// The body of a request that is not an inference POST (the admin API's JSON, /health, the console): a
// routing change is a few hundred bytes.
constexpr std::size_t kAdminBodyLimit = 64u << 10;

constexpr std::string_view kMissingKey =
    "missing or invalid API key (Authorization: Bearer KEY or x-api-key: KEY)";

std::uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

// The engines a `launch:` section starts for `m` (docs/engines.md): one per distinct URL.
supervisor::ModelLayout launch_layout(const ModelConfig& m) {
  supervisor::ModelLayout l;
  l.name = m.name;
  l.served_model_name = m.served_model_name;
  l.max_num_seqs = static_cast<int>(m.routing.max_num_seqs);
  l.data_parallel = m.data_parallel;
  l.dp_size = m.dp_size;
  for (const auto& u : m.data_parallel ? std::vector<UpstreamUrl>{m.dp_url} : m.urls) {
    l.urls.push_back({u.host, u.port, u.base_path});
    set_kv_ports(m, static_cast<int>(l.urls.size()) - 1, l.urls.back());
  }
  return l;
}

// A refusal decided from the request's header, in the error format its path implies (OpenAI's for the
// paths that are not an inference API).
net::Response refusal_for(const http::request_header<>& request, unsigned status, std::string_view message,
                          std::string_view code) {
  const auto api = protocol::api_kind_from_path(request.target());
  net::Response r{static_cast<http::status>(status), request.version()};
  r.set(http::field::content_type, "application/json");
  r.body() = protocol::format_error(api ? protocol::error_format_for(*api) : protocol::ErrorFormat::openai,
                                    static_cast<int>(status), message, code);
  return r;
}

}  // namespace

Gateway::Gateway(asio::io_context& ioc, Config config)
    : ioc_(ioc),
      config_(std::move(config)),
      browsers_(origin_policy(config_.listen_host, config_.allowed_hosts, config_.allowed_origins)),
      started_unix_(unix_seconds_now()),
      rng_(random_seed()),
      stats_(config_.stats_retention),
      models_(ioc.get_executor(), rng_),
      guard_(metrics_),
      proxy_(ioc.get_executor(), {config_, models_, rng_, guard_, metrics_, stats_}),
      poller_(ioc, config_, models_, guard_, metrics_),
      subscriber_(ioc, models_),
      alive_(std::make_shared<bool>(true)) {
  for (auto& m : config_.models) {
    pick_kv_ports(m);
    models_.add(m, config_.metrics.unhealthy_after, config_.outlier);
  }
  poller_.sync();
  subscriber_.sync();
  // Launched engines: their replicas get no traffic until the engine is ready, and none the moment it
  // exits (without waiting for failed scrapes); a successful scrape or readiness brings them back.
  const std::string self = supervisor::self_executable();
  for (const auto& mr : models_.served()) {
    if (mr->config().launch) {
      launcher_.add_model(*mr->config().launch, launch_layout(mr->config()), self);
      mr->replica_set().unscraped("engine starting");
    }
  }
  auto set_health = [this](const std::string& model, const std::vector<int>& replicas, bool healthy,
                           const std::string& why) {
    ModelRuntime* m = models_.find(model);
    if (m) {
      m->replica_set().engine(replicas, healthy, why);
    }
    if (m && !healthy) {
      guard_.replicas_down(*m, replicas, "engine " + why);
    }
  };
  launcher_.on_down([set_health](const std::string& model, const std::vector<int>& replicas,
                                 const std::string& why) { set_health(model, replicas, false, why); });
  launcher_.on_up([set_health](const std::string& model, const std::vector<int>& replicas,
                               const std::string& why) { set_health(model, replicas, true, why); });
}

Gateway::~Gateway() {
  stop();
}

net::ServerOptions Gateway::server_options() {
  net::ServerOptions o;
  o.host = config_.listen_host;
  o.port = config_.listen_port;
  o.max_body_bytes = static_cast<std::size_t>(config_.max_body_bytes);
  o.max_connections = static_cast<std::size_t>(config_.max_connections);
  o.max_inflight_body_bytes = static_cast<std::size_t>(config_.max_inflight_body_bytes);
  o.drain_grace = config_.shutdown_grace;
  o.backlog = 4096;
  // Held requests would wait for room the drain never makes: refused at once, like new ones.
  o.on_drain = [this] { models_.stop_queues(); };
  // A page in a browser that is not the console's, or a Host a loopback warden does not answer for, and a
  // client without a key are refused from the header: the body (up to max_body_size) is never read. The
  // keys are those in force at the time of the request: a reload may have rotated them.
  // Only an inference POST with a key may have a large body, drawn on the shared in-flight budget: the
  // admin API, /health and the console take small bodies of their own (kAdminBodyLimit), so that no
  // request without a credential holds a share of what the keyed ones need.
  o.on_header = [this](const http::request_header<>& request) -> net::HeaderVerdict {
    if (auto refusal = check_origin(browsers_, request)) {
      return refusal_for(request, refusal->status, refusal->message, refusal->code);
    }
    const auto api = protocol::api_kind_from_path(request.target());
    if (!api || request.method() != http::verb::post) {
      return net::BodyAllowance{kAdminBodyLimit, false};  // the admin API, or the proxy's 405
    }
    if (!api_key_ok(request, config_.api_keys)) {
      return refusal_for(request, 401, kMissingKey, "invalid_api_key");
    }
    return net::BodyAllowance{static_cast<std::size_t>(config_.max_body_bytes), true};
  };
  // The server's own refusals in the format of the path; /health says "draining" to a load balancer.
  o.make_error = [](const http::request_header<>& request, unsigned status, std::string_view message,
                    std::string_view code) {
    net::Response r = refusal_for(request, status, message, code);
    if (code == "draining" && path_of(request.target()) == "/health") {
      r.body() = R"({"status":"draining"})";
    }
    return r;
  };
  o.on_tls_failure = [this](std::string_view kind) { metrics_.tls_failure(kind); };
  // The 413 is produced before the body is read: the API (and so the error format) comes from the path.
  o.make_too_large = [](const http::request_header<>& request, std::size_t limit, bool keep_alive) {
    net::Response r = refusal_for(request, 413, fmt::format("request body larger than {} bytes", limit),
                                  "request_too_large");
    r.keep_alive(keep_alive);
    r.prepare_payload();
    return r;
  };
  return o;
}

base::Result<void> Gateway::start() {
  if (auto tls = Reloader::load_tls(config_); !tls) {
    return base::Failure{fmt::format("{}", fmt::join(tls.error(), "\n"))};
  }
  use_upstream_tls();
  if (auto opened = durable_.open(config_.state_dir, stats_, unix_seconds_now()); !opened) {
    return opened;
  }
  launcher_.start();
  durable_.restore(models_.served(), clocks_now());  // a restored routing change reaches each queue with it
  if (config_.shared_state) {
    shared_ = std::make_unique<SharedHomes>(ioc_.get_executor(), *config_.shared_state, models_.served());
    shared_->start();
    proxy_.share_homes(shared_.get());
  }
  poller_.start();
  subscriber_.start();
  asio::co_spawn(ioc_, flush_loop(), asio::bind_cancellation_slot(flush_cancel_.slot(), asio::detached));
  return {};
}

void Gateway::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  *alive_ = false;
  launcher_.stop();  // SIGTERM, then SIGKILL after the grace period; the io_context runs until all are reaped
  poller_.stop();
  subscriber_.stop();
  flush_cancel_.emit(asio::cancellation_type::terminal);
  models_.stop_queues();
  proxy_.close_idle();
  flush();
  if (shared_) {
    shared_->stop();
  }
}

asio::awaitable<void> Gateway::flush_loop() {
  auto alive = alive_;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  // Every second: a crash (SIGKILL, power aside) loses at most the last second of stats and homes.
  while (*alive) {
    timer.expires_after(1s);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!*alive) {
      co_return;
    }
    flush();
  }
}

void Gateway::flush() {
  const ClockPair now = clocks_now();
  std::vector<HomeChanges> homes;
  for (const auto& m : models_.served()) {
    auto taken = m->homes().take_session_changes();
    if (shared_) {
      shared_->changes(*m, taken);
    }
    const auto ttl =
        std::chrono::duration_cast<std::chrono::milliseconds>(m->router().session_config().idle_ttl).count();
    HomeChanges c{m->config().name, {}, std::move(taken.removed), now.unix_ms - ttl};
    c.changed.reserve(taken.changed.size());
    for (const auto& r : taken.changed) {
      c.changed.push_back(now.to_stored(r));
    }
    homes.push_back(std::move(c));
  }
  durable_.flush(stats_, unix_seconds_now(), homes);
}

std::vector<ModelGauges> Gateway::model_gauges() const {
  std::vector<ModelGauges> out;
  for (const auto& m : models_.served()) {
    ModelGauges g;
    g.model = m->config().name;
    g.prefix_breaks = m->prefix_watch().breaks();
    g.thread_compactions = m->prefix_watch().compactions();
    g.side_requests = m->prefix_watch().side_requests();
    const core::RouterView view = m->view(std::chrono::steady_clock::now().time_since_epoch());
    g.threads = view.threads;
    g.threaded_sessions = view.threaded_sessions;
    g.max_model_len = m->max_model_len();
    g.queue_length = m->queue().size();
    g.queue_task_starts = m->queue().task_starts();
    const auto classes = m->queue().by_class();
    for (std::size_t c = 0; c < classes.size(); ++c) {
      g.queue_held_by_class[c] = classes[c].held;
      g.queue_let_in_by_class[c] = classes[c].let_in;
      g.queue_waited_s_by_class[c] = classes[c].waited_s;
    }
    for (const auto& [tenant, held] : m->queue().held_by_tenant()) {
      g.queue_held_by_tenant.emplace_back(tenant != 0 ? fmt::format("{:016x}", tenant) : "none", held);
    }
    const WorkingSet ws = add_up(replica_working_sets(*m, view, false));
    g.conversations = ws.conversations;
    g.working_set_tokens = ws.held_tokens;
    g.kv_capacity_tokens = ws.gpu_tokens;
    g.offload_capacity_tokens = ws.host_tokens;
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<ReplicaGauges> Gateway::replica_gauges() {
  std::vector<ReplicaGauges> out;
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  for (const auto& m : models_.served()) {
    const auto view = m->view(now);
    for (std::size_t i = 0; i < m->replica_set().replicas().size(); ++i) {
      const auto& r = m->replica_set().replicas()[i];
      ReplicaGauges g;
      g.model = m->config().name;
      g.replica = static_cast<int>(i);
      g.in_flight = i < view.counters.size() ? static_cast<int>(view.counters[i].in_flight) : 0;
      g.healthy = r.metrics.healthy;
      g.ejected = m->replica_set().outliers().state(static_cast<int>(i)).ejected();
      g.running = r.metrics.running;
      g.waiting = r.metrics.waiting;
      g.kv_used = r.metrics.kv_usage;
      const core::ReplicaSessions s = i < view.sessions.size() ? view.sessions[i] : core::ReplicaSessions{};
      g.conversations = s.active_conversations;
      g.working_set_tokens = s.held_tokens;
      g.kv_capacity_tokens = r.metrics.kv_capacity_tokens;
      g.offload_capacity_tokens = r.metrics.offload_capacity_tokens;
      g.kv = kv_gauges(r.kv);
      out.push_back(std::move(g));
    }
  }
  return out;
}

// Not a coroutine itself: it hands over the one it picks (one frame and one copy of the reply less).
void Gateway::use_upstream_tls() {
  proxy_.set_upstream_tls(config_.upstream_tls.context);
  poller_.set_tls(config_.upstream_tls.context);
}

asio::awaitable<net::Reply> Gateway::handle(net::Request& req, const net::ConnectionInfo&) {
  if (protocol::api_kind_from_path(req.target())) {
    return proxy_.handle(req);
  }
  return admin(req);
}

}  // namespace warden::gateway
