#pragma once
// `--kv-events-config JSON`, read as vLLM reads it (vllm/config/kv_events.py: KVEventsConfig, validated
// by pydantic): every field optional with vLLM's default, unknown keys ignored, `publisher` defaulting to
// "zmq" when events are enabled and "null" otherwise. Events are published only when enabled with "zmq".
// Plus the endpoint rules of vLLM's ZmqEventPublisher: which endpoints are bound, and each DP rank's.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "protocol/kv_events.hpp"

namespace warden::sim {

struct KvEventsConfig {
  bool enable_kv_cache_events = false;
  std::string publisher = "null";  // "null" or "zmq"
  std::string endpoint = "tcp://*:5557";
  std::optional<std::string> replay_endpoint;
  std::uint64_t buffer_steps = 10'000;  // batches kept for replay
  int hwm = 100'000;                    // the PUB socket's send high-water mark
  std::uint64_t max_queue_size = 100'000;
  std::string topic;
  // Not vLLM's: the older array encoding instead of tagged maps (`sim --kv-events-encoding array`).
  protocol::kv::Encoding encoding = protocol::kv::Encoding::tagged_map;

  bool publishes() const { return enable_kv_cache_events && publisher == "zmq"; }
};

/// The config in `json`, or why not (as vLLM refuses it: a wrong type, an unknown publisher).
[[nodiscard]] base::Result<KvEventsConfig> parse_kv_events_config(std::string_view json);

/// True when the publisher binds `endpoint` (a wildcard `*`, an IPv6 `::`, ipc:// or inproc://); any other
/// is connected to, so that one collector can bind and every engine connect.
[[nodiscard]] bool binds(std::string_view endpoint);

/// DP rank `rank`'s endpoint (vLLM's offset_endpoint_port): rank 0's is `endpoint`; others add the rank to
/// a tcp:// port or append `_dp<rank>` to an inproc:// name; any other transport cannot serve several ranks.
[[nodiscard]] base::Result<std::string> rank_endpoint(std::string_view endpoint, int rank);

}  // namespace warden::sim
