// What a reload (reload/reloader.hpp) changes of the gateway: its ReloadContext, taken from the Gateway's
// own members, on the gateway's thread.
#include "gateway/gateway.hpp"

namespace warden::gateway {

class Gateway::ReloadAccess final : public ReloadContext {
 public:
  explicit ReloadAccess(Gateway& gateway) : g_(gateway) {}

  Config& config() override { return g_.config_; }
  ModelSet& models() override { return g_.models_; }
  DurableState& durable() override { return g_.durable_; }

  void settings_taken() override {
    g_.browsers_ =
        origin_policy(g_.config_.listen_host, g_.config_.allowed_hosts, g_.config_.allowed_origins);
    if (g_.on_listener_tls_) {
      g_.on_listener_tls_(g_.listener_tls());
    }
    g_.use_upstream_tls();
  }

  void model_added(ModelRuntime& m) override {
    if (g_.shared_) {
      m.homes().track_session_changes(true);
    }
  }

  void models_changed() override {
    g_.poller_.sync();
    g_.subscriber_.sync();
    g_.flush();
  }

 private:
  Gateway& g_;
};

ReloadOutcome Gateway::reload() {
  ReloadAccess access(*this);
  return reloader_.reload(access);
}

}  // namespace warden::gateway
