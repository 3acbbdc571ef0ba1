// The admin API's view of the gateway (admin_context.hpp): what its endpoints read and change, taken from
// the Gateway's own members, one request at a time on the gateway's thread.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/admin/admin_context.hpp"
#include "gateway/gateway.hpp"

namespace warden::gateway {

class Gateway::AdminAccess final : public AdminContext {
 public:
  explicit AdminAccess(Gateway& gateway) : g_(gateway) {}

  const Config& config() const override { return g_.config_; }
  std::int64_t started_unix() const override { return g_.started_unix_; }
  std::int64_t unix_now() const override { return unix_seconds_now(); }
  std::span<const std::unique_ptr<ModelRuntime>> models() override { return g_.models_.served(); }
  const StatsStore& stats() const override { return g_.stats_; }

  std::string metrics_text() override {
    std::string body = g_.metrics_.render(g_.replica_gauges(), g_.model_gauges());
    if (g_.shared_) {
      body += g_.shared_->state().render_metrics();
    }
    return body;
  }

  HeldRequests queued(const ModelRuntime& model) const override {
    return {model.queue().size(), model.queue().task_starts()};
  }

  void routing_changed(ModelRuntime& model) override { g_.durable_.save_routing(model); }

  boost::json::value launch_status(std::string_view model) const override {
    return g_.launcher_.status_json(model);
  }

  boost::json::value shared_state() const override {
    if (g_.shared_) {
      const SharedState& shared = g_.shared_->state();
      return {{"redis", shared.config().redis.text}, {"up", shared.up()}, {"warden", shared.warden_id()}};
    }
    return nullptr;
  }

  std::optional<boost::json::object> engine_logs(std::string_view model, std::size_t lines) const override {
    return g_.launcher_.logs_json(model, lines);
  }

  ReloadOutcome reload() override { return g_.reload(); }

 private:
  Gateway& g_;
};

// A sessions page waits for its turn (PageTurns) on a timer, or is refused when the turns fill kMaxWait.
net::asio::awaitable<net::Reply> Gateway::admin(net::Request& req) {
  if (paced_read(req)) {
    const auto now = PageTurns::Clock::now();
    const PageTurns::Turn turn = sessions_turns_.take(now);
    if (!turn.granted) {
      co_return answer_no_turn(req, turn.retry_after);
    }
    if (turn.at > now) {
      net::asio::steady_timer wait(ioc_, turn.at);
      co_await wait.async_wait(net::asio::as_tuple(net::asio::use_awaitable));
    }
  }
  AdminAccess access(*this);
  co_return answer_admin(access, req);
}

}  // namespace warden::gateway
