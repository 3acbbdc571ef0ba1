#include "gateway/poller/poller.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "protocol/context_limit.hpp"

namespace warden::gateway {

namespace asio = net::asio;
namespace http = net::http;

struct Poller::Upstream {
  UpstreamUrl url;
  net::Endpoint endpoint;
  std::vector<ModelRuntime*> models;
  asio::cancellation_signal cancel;
  bool scraped = false;  // once the first scrape has answered or failed
  bool stopped = false;  // no model is served there any more (a reload): its poll loop ends
};

Poller::Poller(asio::io_context& ioc, const Config& config, ModelSet& models, ReplicaGuard& guard,
               WardenMetrics& metrics)
    : ioc_(ioc),
      config_(config),
      models_(models),
      guard_(guard),
      metrics_(metrics),
      pool_(ioc.get_executor()),
      alive_(std::make_shared<bool>(true)) {}

Poller::~Poller() {
  stop();
}

void Poller::start() {
  if (polling_ || !*alive_) {
    return;
  }
  polling_ = true;
  for (const auto& up : upstreams_) {
    spawn(up);
  }
}

void Poller::stop() {
  *alive_ = false;
  for (const auto& up : upstreams_) {
    up->cancel.emit(asio::cancellation_type::terminal);
  }
  pool_.close_idle();
}

void Poller::spawn(const std::shared_ptr<Upstream>& up) {
  asio::co_spawn(ioc_, poll_loop(up), asio::bind_cancellation_slot(up->cancel.slot(), asio::detached));
}

void Poller::sync() {
  for (auto& up : upstreams_) {
    up->models.clear();
  }
  for (const auto& mr : models_.served()) {
    const ModelConfig& m = mr->config();
    for (int i = 0; i < m.replica_count(); ++i) {
      const UpstreamUrl& u = m.replica_url(i);
      auto it = std::find_if(upstreams_.begin(), upstreams_.end(),
                             [&](const auto& up) { return up->url.text == u.text; });
      if (it == upstreams_.end()) {
        auto up = std::make_shared<Upstream>();
        up->url = u;
        up->endpoint = net::Endpoint{u.host, u.port, u.tls};
        upstreams_.push_back(up);
        it = upstreams_.end() - 1;
        if (polling_ && *alive_) {
          spawn(up);
        }
      }
      if (std::find((*it)->models.begin(), (*it)->models.end(), mr.get()) == (*it)->models.end()) {
        (*it)->models.push_back(mr.get());
      }
    }
  }
  std::erase_if(upstreams_, [](const auto& up) {
    if (!up->models.empty()) {
      return false;
    }
    up->stopped = true;
    up->cancel.emit(asio::cancellation_type::terminal);
    return true;
  });
}

void Poller::when_scraped(std::function<void()> done) {
  on_scraped_ = std::move(done);
  check_scraped();
}

void Poller::check_scraped() {
  const bool all =
      std::all_of(upstreams_.begin(), upstreams_.end(), [](const auto& up) { return up->scraped; });
  if (all && on_scraped_) {
    std::exchange(on_scraped_, {})();
  }
}

asio::awaitable<void> Poller::poll_loop(std::shared_ptr<Upstream> up) {
  // Ends with the poller, or when a reload leaves no model served at this URL.
  const auto live = [alive = alive_, up] { return *alive && !up->stopped; };
  asio::steady_timer timer(co_await asio::this_coro::executor);
  net::ClientTimeouts t;
  t.connect = t.write = t.first_byte = t.idle = config_.metrics.scrape_timeout;
  // The context length is asked once the engine answers, and again whenever it comes back (a restarted
  // engine may have another --max-model-len).
  bool want_models = true;
  while (live()) {
    const auto started = std::chrono::steady_clock::now();
    std::optional<std::string> error;
    try {
      error = co_await scrape(*up, t, want_models);
    } catch (const boost::system::system_error& e) {
      if (!live() || e.code() == asio::error::operation_aborted) {
        co_return;
      }
      error = e.what();
    }
    if (!live()) {
      co_return;
    }
    if (!error && want_models) {
      want_models = !co_await fetch_models(up, t);
      if (!live()) {
        co_return;
      }
    }
    if (error) {
      want_models = true;
      metrics_.scrape_error(up->url.text);
      for (ModelRuntime* m : up->models) {
        if (m->replica_set().failed(replicas_of(m->config(), up->url), *error)) {
          spdlog::warn("upstream {} marked unhealthy for model {}: {}", up->url.text, m->config().name,
                       *error);
          guard_.replicas_down(*m, replicas_of(m->config(), up->url), *error);
        }
      }
    } else {
      metrics_.scrape_ok(up->url.text);
    }
    if (!std::exchange(up->scraped, true)) {
      check_scraped();
    }
    timer.expires_at(started + config_.metrics.scrape_interval);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      co_return;
    }
  }
}

asio::awaitable<std::optional<std::string>> Poller::scrape(Upstream& up, const net::ClientTimeouts& t,
                                                           bool& want_models) {
  net::Request req{http::verb::get, up.url.base_path + "/metrics", 11};
  req.set(http::field::accept, "text/plain");
  const auto ended = [&] { return !*alive_ || up.stopped; };  // then the loop ends, nothing taken
  auto res = co_await pool_.send(up.endpoint, std::move(req), t);
  if (ended()) {
    co_return std::nullopt;
  }
  if (!res) {
    co_return res.error().message();
  }
  if (res->status() != 200) {
    res->abort();
    co_return fmt::format("/metrics answered HTTP {}", res->status());
  }
  auto body = co_await res->read_all(32u << 20);
  if (!body) {
    co_return body.error().message();
  }
  if (ended()) {
    co_return std::nullopt;
  }
  for (ModelRuntime* m : up.models) {
    auto scrape = scrape_for_model(*body, m->config().served_model_name);
    if (!scrape) {
      co_return fmt::format("unusable /metrics: {}", scrape.error().message());
    }
    if (m->apply_scrape(up.url, *scrape)) {
      spdlog::info("upstream {} is answering again for model {}", up.url.text, m->config().name);
      want_models = true;
    }
    guard_.judge_progress(*m);
    m->retry_queued();  // the replicas' figures changed
  }
  co_return std::nullopt;
}

asio::awaitable<bool> Poller::fetch_models(std::shared_ptr<Upstream> up, net::ClientTimeouts t) {
  net::Request req{http::verb::get, up->url.base_path + "/v1/models", 11};
  req.set(http::field::accept, "application/json");
  try {
    auto res = co_await pool_.send(up->endpoint, std::move(req), t);
    if (!res) {
      co_return false;
    }
    std::string body;
    if (res->status() == 200) {
      auto b = co_await res->read_all(4u << 20);
      if (!b) {
        co_return false;
      }
      body = std::move(*b);
    } else {
      res->abort();  // an engine without the endpoint: no figure, and no need to ask again
    }
    for (ModelRuntime* m : up->models) {
      const auto len = protocol::max_model_len_from_models(body, m->config().served_model_name);
      m->set_max_model_len(up->url, len);
      if (len) {
        spdlog::info("upstream {}: model {} has a context of {} tokens", up->url.text, m->config().name,
                     *len);
      }
    }
    co_return true;
  } catch (const boost::system::system_error&) {
    co_return false;  // cancelled (the poll loop then ends) or broken off: asked again on the next poll
  }
}

}  // namespace warden::gateway
