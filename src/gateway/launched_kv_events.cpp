#include "gateway/launched_kv_events.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "supervisor/free_ports.hpp"

namespace warden::gateway {

namespace {

// The engine binds every interface (vLLM binds only `*`, `::` or ipc://); the warden connects to the
// replica's own host.
std::string connect_host(const UpstreamUrl& url) {
  if (url.host.empty() || url.host == "0.0.0.0") {
    return "127.0.0.1";
  }
  return url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
}

}  // namespace

void pick_kv_ports(ModelConfig& m) {
  KvEventsConfig& k = m.kv_events;
  if (!k.enabled || !k.launched) {
    return;
  }
  const int n = m.replica_count();
  const auto first = supervisor::free_port_run(2 * n);
  if (!first) {
    spdlog::error("model {}: no {} free ports for its engines' KV cache events; routing without them", m.name,
                  2 * n);
    k.enabled = false;
    return;
  }
  k.first_port = *first;
  k.endpoints.clear();
  for (int i = 0; i < n; ++i) {
    const std::string host = connect_host(m.replica_url(i));
    k.endpoints.push_back(
        {fmt::format("tcp://{}:{}", host, *first + i), fmt::format("tcp://{}:{}", host, *first + n + i)});
  }
}

void set_kv_ports(const ModelConfig& m, int index, supervisor::ModelLayout::Url& url) {
  const KvEventsConfig& k = m.kv_events;
  if (!k.enabled || !k.launched || k.first_port == 0) {
    return;
  }
  // A data-parallel server's ranks add their rank to the port themselves (vLLM's rule).
  url.kv_events_port = static_cast<std::uint16_t>(k.first_port + index);
  url.kv_replay_port = static_cast<std::uint16_t>(k.first_port + m.replica_count() + index);
}

}  // namespace warden::gateway
