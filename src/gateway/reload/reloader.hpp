// The configuration file read again while the warden serves (SIGHUP, POST /api/reload; docs/config.md,
// "Reloading"). Only what plan_reload() finds changed is touched, in place: api keys, tokens, timeouts
// and the models' routing take effect for new requests, a model's replica list is relaid by URL, models
// are added and removed, and what only a restart changes is listed. The ModelRuntime objects that requests
// in flight point at stay where they are (a removed model's until the warden ends), so a stream relayed
// while the file is read again ends as it began. A file with errors changes nothing. A reload sees the
// warden only through a ReloadContext.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "gateway/config/config.hpp"
#include "gateway/reload/reload_plan.hpp"
#include "gateway/runtime/model_set.hpp"
#include "gateway/stores/durable_state.hpp"

namespace warden::gateway {

// What a reload reads and changes of the running warden, and nothing else (the gateway's own is
// Gateway::ReloadAccess, gateway_reload.cpp; a test's may be one over plain objects).
class ReloadContext {
 public:
  virtual ~ReloadContext() = default;

  // The configuration in force: a reload replaces its live settings and its list of models.
  virtual Config& config() = 0;
  virtual ModelSet& models() = 0;
  // Where a reloaded model's routing change and a re-added model's homes are kept.
  virtual DurableState& durable() = 0;
  // The live settings were just taken: what is built from them follows (the allowed hosts and origins,
  // the listener's certificate, the upstreams' TLS).
  virtual void settings_taken() = 0;
  // A model was added: with shared state its homes are shared too.
  virtual void model_added(ModelRuntime& m) = 0;
  // The models served or their replicas changed: the scrapers follow, and the homes a relay moved are
  // stored at once (a warden killed right after must not read them back under the old indexes).
  virtual void models_changed() = 0;
};

class Reloader {
 public:
  // How reload() reads the file: the app's loader applies its command-line overrides (--listen, ...).
  // Without one, config().source is read as it is.
  void set_config_loader(std::function<ConfigResult()> load) { load_ = std::move(load); }
  ReloadOutcome reload(ReloadContext& warden);
  // The TLS files of `config` loaded into its contexts (tls_files.hpp), at start and at every reload:
  // one message per unusable file.
  static base::Result<void, std::vector<std::string>> load_tls(Config& config);

 private:
  std::function<ConfigResult()> load_;
};

}  // namespace warden::gateway
