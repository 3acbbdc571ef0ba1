#include "net/sync_client.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http/field.hpp>

#include <exception>
#include <optional>

namespace warden::net {

std::string SyncResponse::header(std::string_view name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string{} : std::string(it->value());
}

struct SyncClient::Impl {
  Impl(Endpoint ep, std::shared_ptr<TlsContext> tls, ClientTimeouts t)
      : endpoint(std::move(ep)), timeouts(t), pool(ioc.get_executor(), pool_options(std::move(tls))) {}
  static PoolOptions pool_options(std::shared_ptr<TlsContext> tls) {
    PoolOptions o;
    o.max_idle_per_host = 1;
    o.max_idle_age = std::chrono::hours(24);
    o.tls = std::move(tls);
    return o;
  }
  asio::io_context ioc;
  Endpoint endpoint;
  ClientTimeouts timeouts;
  ClientPool pool;
};

SyncClient::SyncClient(std::string host, std::uint16_t port, ClientTimeouts timeouts)
    : impl_(std::make_unique<Impl>(Endpoint{std::move(host), port}, nullptr, timeouts)) {}

SyncClient::SyncClient(Endpoint endpoint, std::shared_ptr<TlsContext> tls, ClientTimeouts timeouts)
    : impl_(std::make_unique<Impl>(std::move(endpoint), std::move(tls), timeouts)) {}

SyncClient::~SyncClient() = default;

void SyncClient::close() {
  impl_->pool.close_idle();
}

std::uint64_t SyncClient::reused_requests() const noexcept {
  return impl_->pool.stats().reuses;
}

Result<SyncResponse> SyncClient::request(http::verb method, std::string_view target, std::string body,
                                         const Headers& headers, ChunkCallback on_chunk) {
  Request req{method, target, 11};
  bool has_content_type = false;
  for (const auto& [k, v] : headers) {
    req.insert(k, v);
    has_content_type = has_content_type || beast::iequals(k, "content-type");
  }
  if (!has_content_type && !body.empty()) {
    req.set(http::field::content_type, "application/json");
  }
  req.body() = std::move(body);
  req.prepare_payload();

  std::optional<Result<SyncResponse>> out;
  auto run = [&]() -> asio::awaitable<void> {
    auto r = co_await impl_->pool.send(impl_->endpoint, std::move(req), impl_->timeouts);
    if (!r) {
      out = r.error();
      co_return;
    }
    SyncResponse res;
    res.status = r->status();
    for (const auto& f : r->header()) {
      res.headers.insert(f.name_string(), f.value());
    }
    while (true) {
      auto piece = co_await r->next();
      if (!piece) {
        out = piece.error();
        co_return;
      }
      if (piece->done) {
        break;
      }
      res.body.append(piece->data);
      if (on_chunk && !on_chunk(piece->data)) {
        res.hung_up = true;
        r->abort();
        break;
      }
    }
    out = std::move(res);
  };
  impl_->ioc.restart();
  std::exception_ptr failure;
  bool finished = false;
  asio::co_spawn(impl_->ioc, run(), [&](std::exception_ptr e) {
    failure = e;
    finished = true;
  });
  // Until this request is done, not until the io_context is out of work: an https connection's relay
  // (net/tls.hpp) keeps work pending for as long as the connection is kept alive.
  while (!finished && impl_->ioc.run_one() > 0) {
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
  return std::move(*out);
}

}  // namespace warden::net
