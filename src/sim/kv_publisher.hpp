#pragma once
// vLLM's ZmqEventPublisher for the sim's ranks (vllm/distributed/kv_events.py): each rank publishes its
// engine steps' KV cache events as multipart [topic, seq (8 bytes, big-endian, from 0), msgpack batch] on a
// PUB socket, keeps its last `buffer_steps` batches, and answers replay requests on a ROUTER socket.
//
// ZMQ sockets are not thread-safe: each rank's sockets are created, used and closed by a thread of its
// own, fed through a mutex-protected queue by the sim's I/O thread (which never blocks on it: past
// max_queue_size a batch is dropped and counted, where vLLM would block its engine). The payload is
// encoded on that thread.
//
// Replay, as vLLM answers it: a DEALER sends ["", start_seq (big-endian)]; the ROUTER receives
// [identity, "", start_seq] and sends [identity, "", seq, payload] for every buffered batch with seq >=
// start_seq, then [identity, "", seq -1, ""]. A request of any other frame count is ignored.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "protocol/kv_events.hpp"
#include "sim/kv_events_config.hpp"

namespace warden::sim {

/// The publishers of all ranks, sharing one ZMQ context.
class KvPublishers {
 public:
  /// Binds or connects every rank's sockets (rank r on the endpoints offset by r); fails as a whole.
  static base::Result<std::unique_ptr<KvPublishers>> open(const KvEventsConfig& config, int ranks);
  ~KvPublishers();
  KvPublishers(const KvPublishers&) = delete;
  KvPublishers& operator=(const KvPublishers&) = delete;

  /// Queues `batch` for `rank` (data_parallel_rank is stamped here); never blocks.
  void publish(int rank, protocol::kv::EventBatch batch);
  /// Publishes what is queued, then closes every socket. Idempotent.
  void stop();
  /// GET /kv_event_sources: [{"data_parallel_rank", "endpoint", "replay_endpoint", "topic"}, ...].
  std::string sources_json() const;
  /// Batches dropped because a rank's queue was full.
  std::uint64_t dropped() const;

 private:
  class Rank;
  KvPublishers() = default;
  void* context_ = nullptr;
  KvEventsConfig config_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace warden::sim
