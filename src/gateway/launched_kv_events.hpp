// KV cache events of the engines the warden launches (docs/engines.md): it picks free ports at start,
// tells each engine through --kv-events-config (supervisor/launch.hpp) and listens there itself.
#pragma once

#include "gateway/config/config.hpp"
#include "supervisor/launch.hpp"

namespace warden::gateway {

// Picks `m`'s ports (a publisher and a replay port per replica) and fills its endpoints, if its engines
// are launched with events; a host with no free run of ports leaves the model without events (logged).
void pick_kv_ports(ModelConfig& m);

// The ports of replica URL `index` of `m` for its engine's command line (0 = none).
void set_kv_ports(const ModelConfig& m, int index, supervisor::ModelLayout::Url& url);

}  // namespace warden::gateway
